// A strategy in a trainer's own launch configuration (issue 7): Megatron-LM command-line
// arguments, a torchtitan TOML, a DeepSpeed JSON, a HyperParallel / SAPP-ND train YAML. Each
// writes only the fields the strategy (and the layout options of the run) determines; a strategy
// the trainer cannot express is an ExportError that says which dimension and why.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/input_error.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

enum class TrainerFormat { megatron, torchtitan, deepspeed, hyperparallel };

// Bad input for the chosen trainer: exit 2 like any other input error.
class ExportError : public InputError {
 public:
  using InputError::InputError;
};

struct TrainerConfig {
  std::string text;                // the file's content (or the argument list)
  std::vector<std::string> notes;  // what the trainer needs beyond this file, for stderr
};

std::optional<TrainerFormat> trainer_format_by_name(const std::string& name);
const char* trainer_format_names();  // "megatron, torchtitan, deepspeed, hyperparallel"
// The usual file name extension of a format's output: txt (arguments), toml, json, yaml.
const char* trainer_format_extension(TrainerFormat f);

TrainerConfig export_strategy(TrainerFormat f, const Model& m, const Run& run, const Strategy& s);
// `text` (an export of the fastest strategy an interrupted search found) with a first line that
// says so in the format's own comment syntax; DeepSpeed's JSON has none, so it gets a top-level
// "meshfit_interrupted" field, which DeepSpeed's config reader leaves alone.
std::string mark_interrupted(TrainerFormat f, const std::string& text);

// The half-precision type the run trains in, as its precision preset names it: "bf16", "fp16",
// or "" for fp32 (every export says it: a trainer left without one trains in fp32).
std::string half_precision(const Run& run);

// The trainer version whose option names an export uses (tests/data/trainer-options/ lists them,
// read from that version's source).
inline constexpr const char* kMegatronVersion = "Megatron-LM main of 2026-08 (d98e8a6)";
inline constexpr const char* kTorchtitanVersion = "torchtitan 0.2.2";
inline constexpr const char* kDeepSpeedVersion = "DeepSpeed 0.16.5";

// One per trainer, each in its own file (megatron_args.cpp, torchtitan_toml.cpp, ...).
TrainerConfig megatron_args(const Model& m, const Run& run, const Strategy& s);
TrainerConfig torchtitan_toml(const Model& m, const Run& run, const Strategy& s);
TrainerConfig deepspeed_json(const Model& m, const Run& run, const Strategy& s);
TrainerConfig hyperparallel_yaml(const Model& m, const Run& run, const Strategy& s);

}  // namespace meshfit
