#include "engine/case_device_names.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <vector>

namespace meshfit {

namespace {

// The presets by GPU model and the memory size (GB as sold) it comes in; size 0 is what a name
// without a size means (the size every public table of the model assumes). An H100 SXM is 80 GB,
// its HBM3e variant 94 or 96 (nvidia-smi shows 95,830 MiB); a B200 sells as 192 GB and reports
// 180 GB usable (183,359 MiB); a GB200 as 186 or 192; a GB300 as 288 and reports 279 (284,208 MiB).
struct ModelSize {
  std::string_view model;
  std::int64_t gb;
  std::string_view preset;
};
constexpr auto kModelSizes = std::to_array<ModelSize>({
    {"H100", 0, "h100-80gb"},
    {"H100", 80, "h100-80gb"},
    {"H100", 94, "h100-96gb"},
    {"H100", 96, "h100-96gb"},
    {"H200", 0, "h200-141gb"},
    {"H200", 141, "h200-141gb"},
    {"GH200", 0, "h200-141gb"},
    {"GH200", 141, "h200-141gb"},
    {"GH200", 144, "h200-141gb"},
    {"H800", 0, "h800-80gb"},
    {"H800", 80, "h800-80gb"},
    {"H20", 0, "h20-96gb"},
    {"H20", 96, "h20-96gb"},
    {"A100", 0, "a100-80gb"},
    {"A100", 40, "a100-40gb"},
    {"A100", 80, "a100-80gb"},
    {"A800", 0, "a800-80gb"},
    {"A800", 80, "a800-80gb"},
    {"B200", 0, "b200-192gb"},
    {"B200", 180, "b200-192gb"},
    {"B200", 192, "b200-192gb"},
    {"B300", 0, "b300-288gb"},
    {"B300", 279, "b300-288gb"},
    {"B300", 288, "b300-288gb"},
    {"GB200", 0, "gb200-186gb"},
    {"GB200", 186, "gb200-186gb"},
    {"GB200", 192, "gb200-186gb"},
    {"GB300", 0, "gb300-288gb"},
    {"GB300", 279, "gb300-288gb"},
    {"GB300", 288, "gb300-288gb"},
    {"MI300X", 0, "mi300x-192gb"},
    {"MI300X", 192, "mi300x-192gb"},
    {"MI325X", 0, "mi325x-256gb"},
    {"MI325X", 256, "mi325x-256gb"},
    {"MI355X", 0, "mi355x-288gb"},
    {"MI355X", 288, "mi355x-288gb"},
    {"L40S", 0, "l40s-48gb"},
    {"L40S", 48, "l40s-48gb"},
    {"910B", 0, "ascend-910b-64gb"},
    {"910B", 64, "ascend-910b-64gb"},
    {"ASCEND910B", 0, "ascend-910b-64gb"},
    {"ASCEND910B", 64, "ascend-910b-64gb"},
});

bool known_model(std::string_view t) {
  return std::any_of(kModelSizes.begin(), kModelSizes.end(), [&](const ModelSize& m) { return m.model == t; });
}

// Words that name a vendor, a product line, a system or a memory type, never the GPU model.
bool filler(std::string_view t) {
  static constexpr std::array<std::string_view, 21> words{
      "NVIDIA", "AMD",  "INSTINCT", "TESLA", "DGX",   "HGX", "SXM",   "SXM4",  "SXM5",   "SXM6",  "OAM",
      "HBM",    "HBM2", "HBM2E",    "HBM3",  "HBM3E", "GPU", "NVL72", "NVL36", "ASCEND", "HUAWEI"};
  return std::find(words.begin(), words.end(), t) != words.end();
}

// Form factors the presets do not describe: a PCIe card, or the H100 NVL pair card, run at a lower
// clock and power than the SXM/OAM modules the presets' peak figures are for.
bool other_form_factor(std::string_view t) { return t == "PCIE" || t == "NVL"; }

std::vector<std::string> tokens_of(std::string_view name) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : name) {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) != 0) {
      cur.push_back(static_cast<char>(std::toupper(u)));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// "80GB" or "80G" (or "80" before a "GB" token, which the caller joins): the size in GB.
std::optional<std::int64_t> size_token(std::string_view t) {
  std::size_t digits = 0;
  while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits])) != 0) ++digits;
  if (digits == 0 || digits > 4) return std::nullopt;
  const std::string_view unit = t.substr(digits);
  if (unit != "GB" && unit != "G") return std::nullopt;
  std::int64_t v = 0;
  for (std::size_t i = 0; i < digits; ++i) v = v * 10 + (t[i] - '0');
  return v;
}

}  // namespace

std::optional<std::string> case_device_preset(std::string_view name) {
  std::vector<std::string> toks = tokens_of(name);
  // "80 GB": a bare number joins the unit after it.
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    const bool number = std::all_of(toks[i].begin(), toks[i].end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (number && (toks[i + 1] == "GB" || toks[i + 1] == "G")) {
      toks[i] += "GB";
      toks.erase(toks.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
  }
  std::string model;
  std::optional<std::int64_t> size;
  for (const std::string& t : toks) {
    if (filler(t)) continue;
    if (other_form_factor(t)) return std::nullopt;
    if (const auto gb = size_token(t)) {
      if (size) return std::nullopt;  // two sizes: not a name this reads
      size = gb;
      continue;
    }
    if (!known_model(t) || !model.empty()) return std::nullopt;  // an unknown word, or two models
    model = t;
  }
  if (model.empty()) return std::nullopt;
  for (const ModelSize& m : kModelSizes) {
    if (m.model == model && m.gb == size.value_or(0)) return std::string(m.preset);
  }
  return std::nullopt;
}

std::string case_device_examples() {
  return "H100-80GB, H100-96GB, H100-SXM-96GB, H200-141GB, GH200, H800-80GB, H20, A100-80GB, A100-40GB, "
         "A800-80GB, B200, B300, GB200, GB300, MI300X-192GB, MI325X, MI355X, L40S, Ascend-910B (vendor, "
         "product-line and form-factor words such as NVIDIA, DGX, SXM5 or HBM3 may surround the model; case "
         "and separators do not matter)";
}

}  // namespace meshfit
