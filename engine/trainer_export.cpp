#include "engine/trainer_export.hpp"

namespace meshfit {

std::optional<TrainerFormat> trainer_format_by_name(const std::string& name) {
  if (name == "megatron") return TrainerFormat::megatron;
  if (name == "torchtitan") return TrainerFormat::torchtitan;
  if (name == "deepspeed") return TrainerFormat::deepspeed;
  if (name == "hyperparallel" || name == "sapp-nd") return TrainerFormat::hyperparallel;
  return std::nullopt;
}

const char* trainer_format_names() { return "megatron, torchtitan, deepspeed, hyperparallel"; }

const char* trainer_format_extension(TrainerFormat f) {
  switch (f) {
    case TrainerFormat::megatron: return "txt";
    case TrainerFormat::torchtitan: return "toml";
    case TrainerFormat::deepspeed: return "json";
    case TrainerFormat::hyperparallel: return "yaml";
  }
  return "txt";
}

std::string half_precision(const Run& run) {
  const std::string& preset = run.precision.preset;
  if (preset.find("fp16") != std::string::npos) return "fp16";
  if (preset.find("bf16") != std::string::npos) return "bf16";
  return run.precision.beta_P <= 2 ? "bf16" : "";  // a preset of the user's own: its parameter bytes say
}

TrainerConfig export_strategy(TrainerFormat f, const Model& m, const Run& run, const Strategy& s) {
  // Only MindFormers (HyperParallel/SAPP-ND) takes a fully-recomputed-layer count per stage (its
  // recompute list, with vpp 1); for the others exporting the plain mode would recompute other
  // layers than the ones estimated.
  const bool per_stage_list = f == TrainerFormat::hyperparallel && s.vpp == 1;
  if (s.recompute == Recompute::full && !run.options.full_layers_per_vstage.empty() && !per_stage_list) {
    const char* name = f == TrainerFormat::megatron     ? "megatron"
                       : f == TrainerFormat::torchtitan ? "torchtitan"
                       : f == TrainerFormat::deepspeed  ? "deepspeed"
                                                        : "hyperparallel";
    throw ExportError(
        std::string(name) +
        " cannot express this strategy: full_layers_per_vstage (fully recomputed layers per virtual stage) has no "
        "trainer setting (--to hyperparallel writes a per-stage list with vpp 1); use recompute_layers (per stage) "
        "instead");
  }
  switch (f) {
    case TrainerFormat::megatron: return megatron_args(m, run, s);
    case TrainerFormat::torchtitan: return torchtitan_toml(m, run, s);
    case TrainerFormat::deepspeed: return deepspeed_json(m, run, s);
    case TrainerFormat::hyperparallel: return hyperparallel_yaml(m, run, s);
  }
  throw ExportError("unknown trainer format");
}

std::string mark_interrupted(TrainerFormat f, const std::string& text) {
  constexpr const char* kNote =
      "meshfit: INTERRUPTED search: the fastest strategy of the part searched, not of the whole space";
  if (f != TrainerFormat::deepspeed) return std::string("# ") + kNote + "\n" + text;
  const auto brace = text.find('{');
  if (brace == std::string::npos) return text;
  return text.substr(0, brace + 1) + "\n  \"meshfit_interrupted\": \"" + kNote + "\"," + text.substr(brace + 1);
}

}  // namespace meshfit
