// torchtitan's job config for a strategy (torchtitan/config/job_config.py: [parallelism]
// data_parallel_replicate_degree, data_parallel_shard_degree, fsdp_reshard_after_forward,
// tensor_parallel_degree, pipeline_parallel_degree, pipeline_parallel_schedule,
// pipeline_parallel_microbatch_size, pipeline_parallel_layers_per_stage,
// pipeline_parallel_first_stage_less_layers, pipeline_parallel_last_stage_less_layers, context_parallel_degree,
// context_parallel_rotate_method, expert_parallel_degree, expert_tensor_parallel_degree;
// [activation_checkpoint] mode, selective_ac_option; [training] local_batch_size,
// global_batch_size).
#include <sstream>

#include "engine/trainer_export.hpp"
#include "search/trainer_targets.hpp"

namespace meshfit {

namespace {

[[noreturn]] void cannot(const std::string& why) {
  throw ExportError("torchtitan cannot express this strategy: " + why);
}

}  // namespace

TrainerConfig torchtitan_toml(const Model& m, const Run& run, const Strategy& s) {
  if (const auto why = trainer_refusal(Framework::torchtitan, m, run, s)) cannot(*why);
  std::ostringstream out;
  out << "# " << kTorchtitanVersion
      << " job config keys (torchtitan/config/job_config.py, the TOML config before #2386)\n";
  out << "[parallelism]\n";
  const std::int64_t shard = s.zero >= 2 ? s.shard_group / s.cp : 1;
  out << "data_parallel_replicate_degree = " << s.dp / shard << '\n';
  out << "data_parallel_shard_degree = " << shard << '\n';
  if (s.zero == 2) {
    out << "fsdp_reshard_after_forward = \"never\"\n";  // parameters kept after the forward: ZeRO-2
  } else if (s.zero == 3) {
    const char* reshard = run.profile.reshard_after_forward == ReshardAfterForward::on    ? "always"
                          : run.profile.reshard_after_forward == ReshardAfterForward::off ? "never"
                                                                                          : "default";
    out << "fsdp_reshard_after_forward = \"" << reshard << "\"\n";
  }
  out << "tensor_parallel_degree = " << s.tp << '\n';
  out << "pipeline_parallel_degree = " << s.pp << '\n';
  if (s.pp > 1) {
    const char* schedule = nullptr;
    switch (s.schedule) {
      case Schedule::one_f_one_b: schedule = "1F1B"; break;
      case Schedule::interleaved_1f1b: schedule = "Interleaved1F1B"; break;
      case Schedule::gpipe: schedule = "GPipe"; break;
      case Schedule::dualpipev: schedule = "DualPipeV"; break;
      default: cannot(std::string("it has no ") + to_string(s.schedule) + " schedule");
    }
    out << "pipeline_parallel_schedule = \"" << schedule << "\"\n";
    out << "pipeline_parallel_microbatch_size = " << s.micro_batch << '\n';
    // torchtitan makes ceil((layers + first_less + last_less) / layers_per_stage) virtual stages,
    // the embedding and the output counting as the first and last stage's "less layers" — the
    // account_embedding / account_loss slots of meshfit's layout (memory-model.md §5.1).
    const RunOptions& o = run.options;
    const std::int64_t slots = m.layers + (o.account_embedding ? 1 : 0) + (o.account_loss ? 1 : 0);
    const std::int64_t nv = s.pp * s.vpp, per_stage = (slots + nv - 1) / nv;
    out << "pipeline_parallel_layers_per_stage = " << per_stage << '\n';
    out << "pipeline_parallel_first_stage_less_layers = " << (o.account_embedding ? 1 : 0) << '\n';
    out << "pipeline_parallel_last_stage_less_layers = " << (o.account_loss ? 1 : 0) << '\n';
  }
  out << "context_parallel_degree = " << s.cp << '\n';
  if (s.cp > 1) {
    // Ring attention passes KV shards between neighbours ("alltoall" rotation) or gathers them.
    out << "context_parallel_rotate_method = \"" << (s.cp_algo == CpAlgo::allgather ? "allgather" : "alltoall")
        << "\"\n";
  }
  if (m.is_moe()) {
    out << "expert_parallel_degree = " << s.ep << '\n';
    out << "expert_tensor_parallel_degree = " << s.etp << '\n';
  }
  out << "\n[activation_checkpoint]\n";
  switch (s.recompute) {
    case Recompute::none: out << "mode = \"none\"\n"; break;
    case Recompute::selective: out << "mode = \"selective\"\nselective_ac_option = \"op\"\n"; break;
    case Recompute::full: out << "mode = \"full\"\n"; break;
  }
  // Without PP each gradient-accumulation step runs local_batch_size sequences; with PP the
  // local batch is one step's sequences, cut into pipeline micro-batches.
  out << "\n[training]\n";
  out << "local_batch_size = " << (s.pp > 1 ? s.micro_batch * s.num_microbatches : s.micro_batch) << '\n';
  out << "global_batch_size = " << run.global_batch << '\n';
  // Without it torchtitan trains at its default of 2048 tokens.
  out << "seq_len = " << run.seq << '\n';
  // FSDP2's CPUOffloadPolicy: parameters, gradients and the optimizer step on the host.
  if (s.offload == Offload::params) out << "enable_cpu_offload = true\n";
  // FSDP2's parameter dtype under mixed precision; fp32 training keeps float32.
  const std::string half = half_precision(run);
  out << "mixed_precision_param = \""
      << (half == "fp16"   ? "float16"
          : half == "bf16" ? "bfloat16"
                           : "float32")
      << "\"\n";
  // AsyncTP: torchtitan's CompileConfig (config/configs.py) pipelines the TP collectives with their
  // matmuls, and refuses it unless the model is compiled.
  if (s.tp_comm_overlap) {
    out << "\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\nenable_async_tensor_parallel = true\n";
  }
  TrainerConfig r;
  r.text = out.str();
  return r;
}

}  // namespace meshfit
