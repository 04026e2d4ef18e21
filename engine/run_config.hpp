// Run input: batch, precision, optimizer, framework profile and rules, from command-line flags
// (docs/spec/cli.md "Run flags"; memory-model.md §2.3, §2.6).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/input_error.hpp"
#include "estimators/device.hpp"
#include "estimators/run.hpp"

namespace meshfit {

// The run flags as given; unset optionals take the framework profile's defaults.
struct RunFlags {
  std::optional<std::int64_t> seq;
  std::optional<std::int64_t> global_batch;
  std::optional<std::int64_t> micro_batch;
  std::optional<std::int64_t> grad_bytes;
  std::optional<std::string> precision;
  std::string optimizer = "adamw";
  std::string framework = "megatron";
  std::string rules = "default";
  bool no_flash_attention = false;
  std::optional<std::string> recompute_switches;  // --recompute-switches: a preset name
  std::optional<std::string> run_options_file;    // --run-options FILE.yaml
  std::optional<std::string> fit_margin;          // --fit-margin p90 (engine/uncertainty.hpp)
};

FrameworkProfile load_framework_profile(const std::string& name, const InputOrigin& origin = {});
Precision load_precision(const std::string& name, const InputOrigin& origin = {});

// Validates the flags and resolves defaults; errors name the flag ("--seq") or, for a manifest
// entry, its field (`origin`). Batch fields are required only when `need_batch`.
Run make_run(const RunFlags& flags, bool need_batch, const InputOrigin& origin = {});

// What a run keeps that depends on the device it runs on, settled once the two meet (estimate,
// search, check, validate): the bytes of the FP8 weight copies (RunOptions::fp8_weight_bytes), as
// the run states them or as its framework lays them out on this device.
void resolve_device_facts(Run& run, const Device& device);

}  // namespace meshfit
