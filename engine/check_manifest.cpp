#include "engine/check_manifest.hpp"

#include <glob.h>

#include <filesystem>

#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/presets.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

namespace fs = std::filesystem;

bool has_glob_chars(const std::string& text) { return text.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> expand_glob(const std::string& pattern, const std::string& base_dir) {
  const fs::path p(pattern);
  const std::string full = p.is_absolute() || base_dir.empty() ? pattern : (fs::path(base_dir) / p).string();
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(full.c_str(), 0, nullptr, &g) == 0) {  // sorted by glob(3)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      std::error_code ec;
      if (fs::is_regular_file(g.gl_pathv[i], ec) || fs::is_directory(g.gl_pathv[i], ec))
        out.emplace_back(g.gl_pathv[i]);
    }
  }
  ::globfree(&g);
  return out;
}

bool looks_like_manifest(const std::string& path) {
  if (!(path.ends_with(".yaml") || path.ends_with(".yml"))) return false;
  try {
    const YAML::Node n = load_yaml_file(path);
    return n.IsMap() && n["entries"].IsDefined();
  } catch (const std::exception&) {
    return false;  // read again, and reported, as what it is
  }
}

namespace {

const std::vector<std::string> kEntryKeys = {"name",
                                             "model",
                                             "device",
                                             "devices",
                                             "seq",
                                             "global_batch",
                                             "micro_batch",
                                             "grad_bytes",
                                             "precision",
                                             "optimizer",
                                             "framework",
                                             "rules",
                                             "flash_attention",
                                             "recompute_switches",
                                             "run_options",
                                             "headroom",
                                             "strategy",
                                             "max_peak_gib",
                                             "min_tokens_per_sec_per_device"};

bool path_like(const std::string& spec) {
  return spec.find('/') != std::string::npos || spec.ends_with(".json") || spec.ends_with(".yaml") ||
         spec.ends_with(".yml");
}

// Reads the fields of one entry (its own over the defaults) into `e`; throws InputError.
void read_fields(const YAML::Node& node, const YAML::Node& defaults, const std::string& source,
                 const std::string& prefix, const std::string& base_dir, CheckEntry& e) {
  if (!node.IsMap()) throw InputError(source, prefix, "expected a map of entry fields");
  const Fields own(node, source, prefix);
  own.reject_unknown(kEntryKeys);
  // A field comes from the entry, else from `defaults`; errors name where it was written.
  e.origin = InputOrigin{source, prefix, {}};
  auto pick = [&](const std::string& key) -> Fields {
    if (own.has(key) || !defaults.IsDefined() || !defaults.IsMap() || !defaults[key].IsDefined()) {
      e.origin.fields[key] = own.path(key);
      return own;
    }
    e.origin.fields[key] = "defaults." + key;
    return Fields(defaults, source, "defaults");
  };
  e.origin.fields["model"] = own.has("model") ? own.path("model") : "defaults.model";
  e.origin.fields["strategy"] = own.path("strategy");
  e.device = pick("device").optional_string("device").value_or("");
  if (e.device.empty())
    throw InputError(source, own.path("device"), "missing; expected a device preset or a device YAML");
  if (const auto d = pick("device").optional_string("device"); d && path_like(*d) && !fs::path(*d).is_absolute()) {
    e.device = (fs::path(base_dir) / *d).string();
  }
  const auto devices = pick("devices").optional_int("devices");
  if (!devices) throw InputError(source, own.path("devices"), "missing; expected a positive device count");
  e.devices = *devices;
  e.run.seq = pick("seq").optional_int("seq");
  e.run.global_batch = pick("global_batch").optional_int("global_batch");
  if (!e.run.seq) throw InputError(source, own.path("seq"), "missing; expected the sequence length in tokens");
  if (!e.run.global_batch)
    throw InputError(source, own.path("global_batch"), "missing; expected sequences per optimizer step");
  e.run.micro_batch = pick("micro_batch").optional_int("micro_batch");
  e.run.grad_bytes = pick("grad_bytes").optional_int("grad_bytes");
  e.run.precision = pick("precision").optional_string("precision");
  e.run.optimizer = pick("optimizer").optional_string("optimizer").value_or("adamw");
  e.run.framework = pick("framework").optional_string("framework").value_or("megatron");
  e.run.rules = pick("rules").optional_string("rules").value_or("default");
  e.run.no_flash_attention = !pick("flash_attention").optional_bool("flash_attention").value_or(true);
  e.run.recompute_switches = pick("recompute_switches").optional_string("recompute_switches");
  if (const auto ro = pick("run_options").optional_string("run_options")) {
    e.run.run_options_file = fs::path(*ro).is_absolute() ? *ro : (fs::path(base_dir) / *ro).string();
  }
  e.headroom = pick("headroom").optional_string("headroom").value_or("0");
  e.strategy = own.optional_string("strategy");  // a pinned strategy belongs to its entry
  e.max_peak_gib = pick("max_peak_gib").optional_number("max_peak_gib", 0, 1e9);
  e.min_tokens_per_sec_per_device =
      pick("min_tokens_per_sec_per_device").optional_number("min_tokens_per_sec_per_device", 0, 1e12);
}

}  // namespace

std::vector<CheckEntry> read_check_manifest(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  const std::string expected = "a check manifest is a map with an 'entries' list (and optionally 'defaults')";
  if (root.IsNull() || !root.IsDefined()) throw InputError(path + ": the manifest is empty; " + expected);
  if (!root.IsMap()) {
    throw InputError(path + ":" + std::to_string(root.Mark().line + 1) + ": expected a map; " + expected);
  }
  // A model file given alone looks like a manifest with unknown keys: say what it needs instead.
  const bool model_like =
      root["model_type"].IsDefined() || root["hidden_size"].IsDefined() || root["model"].IsDefined();
  for (const auto& kv : root) {
    const std::string k = kv.first.Scalar();
    if (k != "entries" && k != "defaults") {
      throw InputError(path + ":" + std::to_string(kv.first.Mark().line + 1), k,
                       "unknown key" + suggestion_text(k, {"entries", "defaults"}) +
                           (model_like ? "; this looks like a model file: checking model files takes --device, "
                                         "--devices, --seq and --global-batch"
                                       : ""));
    }
  }
  if (!root["entries"].IsDefined()) throw InputError(path, "entries", "missing; " + expected);
  const YAML::Node entries = root["entries"];
  if (!entries.IsSequence() || entries.size() == 0) {
    throw InputError(path, "entries", "expected a non-empty list of entries");
  }
  const YAML::Node defaults = root["defaults"];  // invalid when absent: only IsDefined may be asked
  const bool has_defaults = defaults.IsDefined() && defaults.IsMap();
  if (defaults.IsDefined() && !defaults.IsNull()) {
    if (!defaults.IsMap()) throw InputError(path, "defaults", "expected a map of entry fields");
    Fields(defaults, path, "defaults").reject_unknown(kEntryKeys);
    if (defaults["name"].IsDefined()) throw InputError(path, "defaults.name", "a name belongs to one entry");
    if (defaults["strategy"].IsDefined())
      throw InputError(path, "defaults.strategy", "a pinned strategy belongs to one entry");
  }
  const std::string base_dir = fs::path(path).parent_path().string();
  std::vector<CheckEntry> out;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node node = entries[i];
    const std::string prefix = "entries[" + std::to_string(i) + "]";
    CheckEntry e;
    e.file = path;
    e.line = node.Mark().line + 1;
    e.name = prefix;
    std::string model;
    try {
      if (node.IsMap()) {
        const Fields f(node, path, prefix);
        if (const auto n = f.optional_string("name")) e.name = printable(*n);  // reaches every report
        model = f.optional_string("model").value_or("");
        if (model.empty() && has_defaults)
          model = Fields(defaults, path, "defaults").optional_string("model").value_or("");
        if (model.empty())
          throw InputError(path, f.path("model"), "missing; expected a model preset, a file or a glob");
      }
      read_fields(node, defaults, path, prefix, base_dir, e);
    } catch (const InputError& err) {
      e.model = model;
      e.error = err.what();
      out.push_back(e);
      continue;
    }
    if (has_glob_chars(model)) {
      const auto files = expand_glob(model, base_dir);
      if (files.empty()) {
        e.model = model;
        e.error = InputError(path, prefix + ".model", "the pattern " + quoted_text(model) + " matches no file").what();
        out.push_back(e);
        continue;
      }
      for (const auto& file : files) {
        CheckEntry x = e;
        x.name = e.name + "/" + printable(fs::path(file).filename().string());
        x.model = file;
        x.file = file;
        x.line = 0;
        out.push_back(x);
      }
      continue;
    }
    // A path is relative to the manifest; a bare name is a preset unless such a file sits beside it.
    const fs::path beside = fs::path(base_dir) / model;
    std::error_code ec;
    if (!find_preset("models", model) && (path_like(model) || fs::exists(beside, ec)) &&
        fs::path(model).is_relative()) {
      e.model = beside.string();
      e.file = e.model;
      e.line = 0;
    } else {
      e.model = model;
    }
    out.push_back(e);
  }
  return out;
}

std::vector<CheckEntry> entries_from_files(const std::vector<std::string>& files, const CheckEntry& shared) {
  std::vector<CheckEntry> out;
  for (const auto& spec : files) {
    std::vector<std::string> matched = {spec};
    if (has_glob_chars(spec)) matched = expand_glob(spec, "");
    if (matched.empty()) {
      CheckEntry e = shared;
      e.model = e.file = spec;
      e.name = printable(spec);
      e.error = "command line: " + quoted_text(spec) + " matches no file";
      out.push_back(e);
      continue;
    }
    for (const auto& file : matched) {
      CheckEntry e = shared;
      e.model = file;
      e.name = printable(file);
      std::error_code ec;
      e.file = fs::exists(file, ec) ? file : "";
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace meshfit
