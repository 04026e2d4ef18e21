#include "search/trainer_targets.hpp"

namespace meshfit {

namespace {

// Megatron-LM (megatron/training/arguments.py): no GPipe, ZB-H1 or DualPipeV schedule; Megatron
// FSDP (--use-megatron-fsdp, ZeRO-2/3) shards over the whole data-parallel group and does not
// combine with pipeline parallelism yet; block recompute takes the same count in every chunk.
std::optional<std::string> megatron_refusal(const Strategy& s) {
  if (s.schedule == Schedule::gpipe || s.schedule == Schedule::zb_h1 || s.schedule == Schedule::dualpipev) {
    return std::string("Megatron-LM has no ") + to_string(s.schedule) +
           " schedule (pp_schedule=" + to_string(s.schedule) + ")";
  }
  const std::int64_t replicas = s.zero >= 1 ? s.dp * s.cp / s.shard_group : 1;
  if (s.zero >= 2 && replicas > 1) {
    return "Megatron FSDP shards over the whole data-parallel group; a ZeRO-" + std::to_string(s.zero) +
           " shard group of " + std::to_string(s.shard_group) + " (HSDP) has no flag";
  }
  if (s.zero >= 2 && s.pp > 1) return "Megatron FSDP (ZeRO-" + std::to_string(s.zero) + ") does not run with pp > 1";
  if (s.offload == Offload::params) return "it offloads the optimizer only (--optimizer-cpu-offload), not parameters";
  if (s.offload == Offload::optimizer && s.zero != 1) {
    return "its optimizer CPU offload runs in the distributed optimizer (zero_stage=1), not in Megatron FSDP";
  }
  if (s.recompute == Recompute::full && s.recompute_layers % s.vpp != 0) {
    return "recompute_layers=" + std::to_string(s.recompute_layers) +
           " does not divide over vpp=" + std::to_string(s.vpp) +
           " chunks (Megatron recomputes the same count in each chunk)";
  }
  return std::nullopt;
}

// torchtitan (torchtitan/distributed/parallel_dims.py, parallelize.py): its TP plan always shards
// the norms along the sequence; FSDP2 is ZeRO-3 (reshard after forward) or ZeRO-2-like (never
// reshard), with no ZeRO-1; DDP (zero 0) runs alone, without TP, PP or CP, and CP shards
// parameters over its ranks; ring attention only; its pipeline split makes
// ceil(slots / layers_per_stage) virtual stages, the embedding and the output counting as the
// first and last stage's "less layers".
std::optional<std::string> torchtitan_refusal(const Model& m, const Run& run, const Strategy& s) {
  if (s.tp > 1 && !s.sp) {
    return std::string("its tensor-parallel plan always shards norms along the sequence (sp=true is required with ") +
           "tp > 1)";
  }
  if (s.zero == 1)
    return "it shards with FSDP2 (zero_stage=3, or 2 without resharding) or not at all; zero_stage=1 "
           "has no setting";
  if (s.zero == 0 && (s.tp > 1 || s.pp > 1 || s.cp > 1)) {
    return "its DDP (zero_stage=0) does not combine with tp, pp or cp > 1; use FSDP (zero_stage=2 or 3)";
  }
  if (s.cp > 1 && (s.cp_algo == CpAlgo::ulysses || s.cp_algo == CpAlgo::hybrid)) {
    return std::string("it has no Ulysses context parallelism (cp_algo=") + to_string(s.cp_algo) + ")";
  }
  if (s.pp > 1) {
    if (s.schedule == Schedule::zb_h1) return std::string("it has no ") + to_string(s.schedule) + " schedule";
    const RunOptions& o = run.options;
    const std::int64_t slots = m.layers + (o.account_embedding ? 1 : 0) + (o.account_loss ? 1 : 0);
    const std::int64_t nv = s.pp * s.vpp, per_stage = (slots + nv - 1) / nv;
    if ((slots + per_stage - 1) / per_stage != nv || !o.layers_per_vstage.empty() || o.layers_first_stage > 0 ||
        o.layers_last_stage > 0) {
      return std::to_string(slots) + " layer slots cannot make exactly pp*vpp = " + std::to_string(nv) +
             " virtual stages of pipeline_parallel_layers_per_stage layers";
    }
  }
  if (s.recompute == Recompute::full && s.recompute_layers != 0) {
    return "it recomputes every layer or none (recompute_layers=" + std::to_string(s.recompute_layers) + ")";
  }
  if (s.offload == Offload::optimizer) {
    return "its CPU offload (training.enable_cpu_offload, FSDP2's CPUOffloadPolicy) moves parameters and gradients "
           "too: offload=params";
  }
  return std::nullopt;
}

// DeepSpeed's config JSON (deepspeed/runtime/config.py): data parallelism and ZeRO, AutoTP
// training (tensor_parallel.autotp_size, with ZeRO 0-2 and no sequence parallelism) and Ulysses
// (sequence_parallel_size); pipeline and expert degrees are set in model code (PipelineModule,
// the MoE layer's ep_size); a shard group below dp is MiCS, which needs ZeRO-3.
std::optional<std::string> deepspeed_refusal(const Strategy& s) {
  if (s.pp > 1)
    return "its config JSON has no pipeline degree (pp=" + std::to_string(s.pp) + "; PipelineModule sets it in code)";
  if (s.ep > 1) {
    return "its config JSON has no expert-parallel degree (ep=" + std::to_string(s.ep) +
           "; the MoE layer's ep_size sets it)";
  }
  if (s.tp > 1 && (s.zero == 3 || s.sp)) {
    return "its AutoTP training (tensor_parallel.autotp_size) runs with ZeRO 0-2 and without sequence parallelism "
           "(tp=" +
           std::to_string(s.tp) + ", zero_stage=" + std::to_string(s.zero) + (s.sp ? ", sp=true)" : ")");
  }
  if (s.cp > 1 && s.cp_algo != CpAlgo::ulysses) {
    return std::string("its sequence parallelism (sequence_parallel_size) is Ulysses only (cp_algo=") +
           to_string(s.cp_algo) + ")";
  }
  if (s.recompute == Recompute::selective) return "it has no selective activation recompute (recompute=selective)";
  const std::int64_t replicas = s.zero >= 1 ? s.dp * s.cp / s.shard_group : 1;
  if (replicas > 1 && s.zero != 3) {
    return "a ZeRO-" + std::to_string(s.zero) + " shard group of " + std::to_string(s.shard_group) +
           " smaller than dp=" + std::to_string(s.dp * s.cp) +
           " has no setting (MiCS, its hierarchical sharding, needs stage 3)";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> trainer_refusal(Framework trainer, const Model& m, const Run& run, const Strategy& s) {
  switch (trainer) {
    case Framework::megatron: return megatron_refusal(s);
    case Framework::torchtitan: return torchtitan_refusal(m, run, s);
    case Framework::deepspeed: return deepspeed_refusal(s);
  }
  return std::nullopt;
}

}  // namespace meshfit
