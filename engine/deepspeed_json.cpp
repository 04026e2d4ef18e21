// DeepSpeed's config JSON for a strategy (deepspeed.ai/docs/config-json: train_batch_size,
// train_micro_batch_size_per_gpu, gradient_accumulation_steps, zero_optimization.stage and
// mics_shard_size). DeepSpeed's JSON holds data parallelism and ZeRO only: tensor, pipeline,
// sequence and expert degrees are set in model code, so a strategy using them is an error here.
#include <sstream>

#include "engine/trainer_export.hpp"

namespace meshfit {

namespace {

[[noreturn]] void cannot(const std::string& why) {
  throw ExportError("deepspeed cannot express this strategy: " + why);
}

}  // namespace

TrainerConfig deepspeed_json(const Model&, const Run& run, const Strategy& s) {
  if (s.tp > 1)
    cannot("its config JSON has no tensor-parallel degree (tp=" + std::to_string(s.tp) +
           "; set it in Megatron-DeepSpeed)");
  if (s.pp > 1)
    cannot("its config JSON has no pipeline degree (pp=" + std::to_string(s.pp) + "; PipelineModule sets it in code)");
  if (s.cp > 1) cannot("its config JSON has no context/sequence-parallel degree (cp=" + std::to_string(s.cp) + ")");
  if (s.ep > 1)
    cannot("its config JSON has no expert-parallel degree (ep=" + std::to_string(s.ep) +
           "; the MoE layer's ep_size sets it)");
  if (s.recompute == Recompute::selective) cannot("it has no selective activation recompute (recompute=selective)");
  const std::int64_t replicas = s.zero >= 1 ? s.dp / s.shard_group : 1;
  if (replicas > 1 && s.zero != 3) {
    cannot("a ZeRO-" + std::to_string(s.zero) + " shard group of " + std::to_string(s.shard_group) +
           " smaller than dp=" + std::to_string(s.dp) +
           " has no setting (MiCS, its hierarchical sharding, needs stage 3)");
  }
  std::ostringstream out;
  // DeepSpeed checks train_batch_size = micro batch x accumulation steps x data-parallel ranks.
  out << "{\n";
  out << "  \"train_batch_size\": " << run.global_batch << ",\n";
  out << "  \"train_micro_batch_size_per_gpu\": " << s.micro_batch << ",\n";
  out << "  \"gradient_accumulation_steps\": " << s.num_microbatches << ",\n";
  out << "  \"zero_optimization\": {\n";
  out << "    \"stage\": " << s.zero;
  if (replicas > 1) out << ",\n    \"mics_shard_size\": " << s.shard_group;
  out << "\n  }\n}\n";
  TrainerConfig r;
  r.text = out.str();
  if (s.recompute == Recompute::full) {
    r.notes.push_back(
        "recompute=full: DeepSpeed's JSON cannot switch activation checkpointing on; enable it in the model "
        "(Hugging Face: model.gradient_checkpointing_enable(); or deepspeed.checkpointing.checkpoint per layer)");
  }
  return r;
}

}  // namespace meshfit
