// DeepSpeed's config JSON for a strategy (deepspeed.ai/docs/config-json: train_batch_size,
// train_micro_batch_size_per_gpu, gradient_accumulation_steps, zero_optimization.stage and
// mics_shard_size, bf16/fp16, tensor_parallel.autotp_size, sequence_parallel_size). Pipeline and
// expert degrees are set in model code, so a strategy using them is an error here
// (search/trainer_targets.cpp says what DeepSpeed can run).
#include <sstream>

#include "engine/trainer_export.hpp"
#include "search/trainer_targets.hpp"

namespace meshfit {

namespace {

[[noreturn]] void cannot(const std::string& why) {
  throw ExportError("deepspeed cannot express this strategy: " + why);
}

}  // namespace

TrainerConfig deepspeed_json(const Model& m, const Run& run, const Strategy& s) {
  if (const auto why = trainer_refusal(Framework::deepspeed, m, run, s)) cannot(*why);
  const std::int64_t replicas = s.zero >= 1 ? s.dp * s.cp / s.shard_group : 1;
  std::ostringstream out;
  // DeepSpeed checks train_batch_size = micro batch x accumulation steps x data-parallel ranks.
  out << "{\n";
  out << "  \"train_batch_size\": " << run.global_batch << ",\n";
  out << "  \"train_micro_batch_size_per_gpu\": " << s.micro_batch << ",\n";
  out << "  \"gradient_accumulation_steps\": " << s.num_microbatches << ",\n";
  // Without a bf16 or fp16 block DeepSpeed trains in fp32.
  const std::string half = half_precision(run);
  if (!half.empty()) out << "  \"" << half << "\": {\n    \"enabled\": true\n  },\n";
  if (s.tp > 1) out << "  \"tensor_parallel\": {\n    \"autotp_size\": " << s.tp << "\n  },\n";
  if (s.cp > 1) out << "  \"sequence_parallel_size\": " << s.cp << ",\n";
  out << "  \"zero_optimization\": {\n";
  out << "    \"stage\": " << s.zero;
  if (replicas > 1) out << ",\n    \"mics_shard_size\": " << s.shard_group;
  // ZeRO-Offload (stages 1-3) and ZeRO-3's parameter offload, into pinned host memory.
  if (s.offload != Offload::none) {
    out << ",\n    \"offload_optimizer\": {\n      \"device\": \"cpu\",\n      \"pin_memory\": true\n    }";
  }
  if (s.offload == Offload::params) {
    out << ",\n    \"offload_param\": {\n      \"device\": \"cpu\",\n      \"pin_memory\": true\n    }";
  }
  out << "\n  },\n";
  // DeepSpeed reads only the keys it knows: this one says what the file was written for.
  out << "  \"meshfit_target\": \"" << kDeepSpeedVersion << " config keys; sequence length " << run.seq
      << " is set in the model and data code\"\n}\n";
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
