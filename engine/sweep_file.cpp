#include "engine/sweep_file.hpp"

#include <cstdio>
#include <filesystem>

#include "engine/cli_options.hpp"
#include "engine/utf8_text.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

namespace {

// A list field's items as text (a single scalar counts as a list of one).
std::vector<std::string> texts(const Fields& f, const std::string& key, bool required) {
  std::vector<std::string> out;
  if (!f.has(key)) {
    if (required) f.fail(key, "missing; expected a list");
    return out;
  }
  const YAML::Node n = f.raw(key);
  if (n.IsScalar()) return {n.Scalar()};
  if (!n.IsSequence() || n.size() == 0) f.fail(key, "expected a value or a non-empty list");
  for (const auto& item : n) {
    if (!item.IsScalar()) f.fail(key, "expected a list of values");
    out.push_back(item.Scalar());
  }
  return out;
}

std::int64_t positive(const Fields& f, const std::string& key, const std::string& text) {
  const auto v = parse_integer(text);
  if (!v || *v < 1) f.fail(key, "expected positive integers, got " + quoted_text(text));
  return *v;
}

}  // namespace

std::string Sweep::fingerprint() const {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the points' axis values
  auto mix = [&](const std::string& s) {
    for (unsigned char ch : s + '\x1f') h = (h ^ ch) * 1099511628211ULL;
  };
  for (const auto& p : points) {
    mix(p.model);
    mix(p.device);
    mix(std::to_string(p.devices) + "/" + std::to_string(p.seq) + "/" + std::to_string(p.global_batch));
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Sweep read_sweep(const std::string& path) {
  const Fields f(load_yaml_file(path), path);
  f.reject_unknown(
      {"models", "devices", "device_counts", "seq", "global_batch", "framework", "headroom", "search", "keep"});
  const std::string dir = std::filesystem::path(path).parent_path().string();
  Sweep sw;
  sw.source = std::filesystem::path(path).filename().string();

  // Models: presets, files relative to the sweep file, or globs (one model per file, sorted).
  // Each is named as the sweep file names it (relative to it), so that shards run from anywhere
  // describe the same points; the path to load it by is kept beside the name.
  namespace fs = std::filesystem;
  auto resolved = [&](const std::string& name) {
    std::error_code ec;
    const fs::path p = fs::path(dir) / name;
    return fs::exists(p, ec) ? p.lexically_normal().string() : name;
  };
  std::vector<std::pair<std::string, std::string>> models;  // (name, what load_model takes)
  for (const auto& m : texts(f, "models", true)) {
    if (has_glob_chars(m)) {
      const auto files = expand_glob(m, dir);
      if (files.empty()) f.fail("models", "the pattern " + quoted_text(m) + " matches no file");
      for (const auto& file : files) {
        models.emplace_back(fs::path(file).lexically_relative(dir.empty() ? "." : dir).lexically_normal().string(),
                            file);
      }
    } else {
      models.emplace_back(m, resolved(m));
    }
  }
  std::vector<std::pair<std::string, std::string>> devices;
  for (const auto& d : texts(f, "devices", true)) devices.emplace_back(d, resolved(d));
  std::vector<std::int64_t> counts;
  for (const auto& c : texts(f, "device_counts", true)) {
    ClusterFlags one;
    one.devices = c;
    try {
      for (auto n : device_counts(one)) counts.push_back(n);
    } catch (const InputError&) {
      f.fail("device_counts", "expected counts, lists or ranges as --devices takes them, got " + quoted_text(c));
    }
  }
  std::vector<std::int64_t> seqs, batches;
  for (const auto& s : texts(f, "seq", true)) {
    try {
      seqs.push_back(parse_sequence_length(s));
    } catch (const InputError&) {
      f.fail("seq", "expected sequence lengths (8192 or 8k), got " + quoted_text(s));
    }
  }
  for (const auto& b : texts(f, "global_batch", true)) batches.push_back(positive(f, "global_batch", b));
  const std::string framework = f.optional_string("framework").value_or("megatron");
  const std::string headroom = f.optional_string("headroom").value_or("0");
  if (f.has("keep")) sw.keep = read_keep(f, "keep");
  std::shared_ptr<const SearchFile> search;
  if (const auto s = f.optional_string("search")) {
    search = std::make_shared<const SearchFile>(
        load_search_file(dir.empty() ? *s : (std::filesystem::path(dir) / *s).string()));
  }

  // A sweep's points are its axes' product: bounded, so that a mistyped range cannot ask for more
  // searches (and memory) than any cluster study needs.
  constexpr double kMaxPoints = 1e6;
  const double product = static_cast<double>(models.size()) * static_cast<double>(devices.size()) *
                         static_cast<double>(counts.size()) * static_cast<double>(seqs.size()) *
                         static_cast<double>(batches.size());
  if (product > kMaxPoints) {
    f.fail("device_counts", "the axes make " + std::to_string(static_cast<std::int64_t>(product)) +
                                " points; expected at most 1,000,000 (split the sweep)");
  }
  for (const auto& [m, model_path] : models) {
    for (const auto& [d, device_path] : devices) {
      for (auto seq : seqs) {
        for (auto gb : batches) {
          for (auto n : counts) {
            SweepPoint p{m, d, n, seq, gb, {}};
            CheckEntry& e = p.entry;
            e.name =
                m + " " + d + " x" + std::to_string(n) + " seq " + std::to_string(seq) + " gb " + std::to_string(gb);
            e.model = model_path;
            e.file = path;
            e.device = device_path;
            e.devices = n;
            e.run.seq = seq;
            e.run.global_batch = gb;
            e.run.framework = framework;
            e.headroom = headroom;
            e.search = search;
            e.keep_front = sw.keep.front;
            e.origin.source = path;
            sw.points.push_back(std::move(p));
          }
        }
      }
    }
  }
  return sw;
}

}  // namespace meshfit
