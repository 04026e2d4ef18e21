#include "engine/device_config.hpp"

#include <filesystem>
#include <sstream>

#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/presets.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

namespace {

Device preset_device(const std::string& name, const std::string& source, const std::string& field) {
  const auto preset = find_preset("devices", name);
  if (!preset) {
    throw InputError(source, field,
                     "unknown device preset " + quoted_text(name) + suggestion_text(name, preset_names("devices")));
  }
  return device_from_yaml(parse_yaml_text(std::string(preset->content), preset->source), preset->source);
}

}  // namespace

Device device_from_yaml(const YAML::Node& doc, const std::string& source) {
  const Fields f(doc, source);
  f.reject_unknown({"name",
                    "generation",
                    "preset",
                    "capacity",
                    "fragmentation",
                    "fragmentation_floor",
                    "overhead_context",
                    "overhead_per_communicator",
                    "overhead_workspaces",
                    "overhead_ep_library",
                    "overhead_fixed",
                    "peak_flops",
                    "hbm_bandwidth",
                    "devices_per_node",
                    "domain_segment",
                    "intra_bandwidth",
                    "inter_bandwidth",
                    "eta_max",
                    "fp8_matmul_ratio",
                    "tensor_flops_per_exp",
                    "kernel_overhead",
                    "eta_intra",
                    "eta_inter",
                    "eta_a2a_inter",
                    "alpha_intra",
                    "alpha_inter",
                    "eta_hbm",
                    "host_memory",
                    "host_reserved",
                    "host_link_bandwidth",
                    "eta_host_link",
                    "host_memory_bandwidth",
                    "eta_host_memory"});
  Device d;
  const auto base = f.optional_string("preset");
  if (base) d = preset_device(*base, source, "preset");
  // Printed in every report: made printable (no control bytes, valid UTF-8) once, here.
  d.name = printable(f.optional_string("name").value_or(base ? d.name : std::filesystem::path(source).stem().string()));
  d.generation = printable(f.optional_string("generation").value_or(d.generation));

  // Without a preset to start from, the hardware figures must all be given. Each lies within
  // bounds far beyond any device's (an H100: 80 GiB, 989 TFLOP/s, 3.35 TB/s of HBM, 450 GB/s of
  // NVLink), so that every time and byte count the estimators form stays finite and positive.
  // A positive figure of at least `lo` (0: any positive) and at most `hi`.
  auto positive = [&](const char* key, double& out, double lo, double hi) {
    if (const auto v = f.optional_number(key, 0, hi)) {
      if (*v <= 0) f.fail(key, "expected a positive number, got " + std::to_string(*v));
      if (*v < lo) {
        std::ostringstream text;
        text << "expected at least " << lo << ", got " << *v;
        f.fail(key, text.str());
      }
      out = *v;
    } else if (!base) {
      f.fail(key, "missing; expected a positive number (or 'preset:' to start from a bundled device)");
    }
  };
  auto bounded = [&](const char* key, double& out, double lo, double hi) {
    if (const auto v = f.optional_number(key, lo, hi)) out = *v;
  };
  constexpr double kPiB = 1125899906842624.0;  // 2^50 bytes: capacity and overheads
  positive("capacity", d.capacity, 0, kPiB);
  positive("peak_flops", d.peak_flops, 1e6, 1e18);        // FLOP/s
  positive("hbm_bandwidth", d.hbm_bandwidth, 1e6, 1e16);  // B/s, as the links'
  positive("intra_bandwidth", d.intra_bandwidth, 1e6, 1e16);
  positive("inter_bandwidth", d.inter_bandwidth, 1e6, 1e16);
  if (const auto v = f.optional_int("devices_per_node")) {
    if (*v > kMaxDevices)
      f.fail("devices_per_node", "expected at most " + std::to_string(kMaxDevices) + ", got " + std::to_string(*v));
    d.devices_per_node = *v;
  } else if (!base) {
    f.fail("devices_per_node", "missing; expected a positive integer");
  }
  if (const auto v = f.optional_int("domain_segment")) {
    if (*v < 1 || *v > d.devices_per_node)
      f.fail("domain_segment",
             "expected 1 to devices_per_node (" + std::to_string(d.devices_per_node) + "), got " + std::to_string(*v));
    d.domain_segment = *v;
  }
  bounded("fragmentation", d.fragmentation, 0, 10);
  bounded("fragmentation_floor", d.fragmentation_floor, 0, 10);
  bounded("overhead_context", d.overhead_context, 0, kPiB);
  bounded("overhead_per_communicator", d.overhead_per_communicator, 0, kPiB);
  bounded("overhead_workspaces", d.overhead_workspaces, 0, kPiB);
  bounded("overhead_ep_library", d.overhead_ep_library, 0, kPiB);
  bounded("overhead_fixed", d.overhead_fixed, 0, kPiB);
  bounded("eta_max", d.eta_max, 1e-6, 1);
  bounded("fp8_matmul_ratio", d.fp8_matmul_ratio, 1e-3, 100);
  bounded("tensor_flops_per_exp", d.tensor_flops_per_exp, 0, 1e6);
  bounded("kernel_overhead", d.kernel_overhead, 0, 1);
  bounded("eta_intra", d.eta_intra, 1e-6, 1);
  bounded("eta_inter", d.eta_inter, 1e-6, 1);
  bounded("eta_a2a_inter", d.eta_a2a_inter, 1e-6, 1);
  bounded("alpha_intra", d.alpha_intra, 0, 1);
  bounded("alpha_inter", d.alpha_inter, 0, 1);
  bounded("eta_hbm", d.eta_hbm, 1e-6, 1);
  // Optional: a device without them cannot offload (strategy_rules says so).
  bounded("host_memory", d.host_memory, 0, kPiB);
  bounded("host_reserved", d.host_reserved, 0, kPiB);
  bounded("host_link_bandwidth", d.host_link_bandwidth, 0, 1e16);
  bounded("eta_host_link", d.eta_host_link, 1e-6, 1);
  bounded("host_memory_bandwidth", d.host_memory_bandwidth, 0, 1e16);
  bounded("eta_host_memory", d.eta_host_memory, 1e-6, 1);
  return d;
}

Device load_device(const std::string& spec, const InputOrigin& origin) {
  if (const auto preset = find_preset("devices", spec)) {
    return device_from_yaml(parse_yaml_text(std::string(preset->content), preset->source), preset->source);
  }
  std::error_code ec;
  const bool looks_like_path = spec.find('/') != std::string::npos || spec.ends_with(".yaml") ||
                               spec.ends_with(".yml") || spec.ends_with(".json");
  if (!std::filesystem::exists(spec, ec) && !looks_like_path) {
    throw InputError(origin.source, origin.field("--device"),
                     "unknown device preset " + quoted_text(spec) + suggestion_text(spec, preset_names("devices")) +
                         "; or give a path to a device YAML");
  }
  return device_from_yaml(load_yaml_file(spec), spec);
}

Cluster make_cluster(const std::string& device_spec, std::int64_t devices, const InputOrigin& origin) {
  if (devices < 1 || devices > kMaxDevices) {
    throw InputError(
        origin.source, origin.field("--devices"),
        "expected a positive integer up to " + std::to_string(kMaxDevices) + ", got " + std::to_string(devices));
  }
  return Cluster{load_device(device_spec, origin), devices};
}

}  // namespace meshfit
