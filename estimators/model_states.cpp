#include "estimators/model_states.hpp"
#include "estimators/strategy_rules.hpp"

#include <algorithm>

namespace meshfit {

ZeroDivisors zero_divisors(const Strategy& s, const Run& run) {
  ZeroDivisors z;
  z.offload = s.offload;
  if (const auto& o = run.options.shard_override; o.set()) {  // §3.2's override, whatever z says
    z.P = static_cast<double>(o.P);
    z.G = static_cast<double>(o.G);
    z.OS = static_cast<double>(o.OS);
  }
  if (s.zero == 0) return z;
  const double G = static_cast<double>(s.shard_group);
  // G_e = G·tp/(ep·etp): the routed experts' shard group (§3.1), unless the run sets it.
  const double Ge = run.options.expert_shard_group
                        ? static_cast<double>(*run.options.expert_shard_group)
                        : static_cast<double>(s.shard_group * s.tp) / static_cast<double>(s.ep * s.etp);
  const bool override = run.options.shard_override.set();
  if (!override) z.OS = G;
  z.OSe = Ge;
  if (s.zero >= 2) {
    if (!override) z.G = G;
    z.Ge = Ge;
  }
  if (s.zero >= 3) {
    if (!override) z.P = G;
    z.Pe = Ge;
  }
  return z;
}

RankParams rank_params(const LayerParams& p, const Strategy& s) {
  const double tp = static_cast<double>(s.tp);
  RankParams r;
  r.non_expert = static_cast<double>(p.non_expert_split()) / tp + static_cast<double>(p.non_expert_repl());
  r.shared = static_cast<double>(p.shared_split) / tp + static_cast<double>(p.shared_repl);
  r.routed = static_cast<double>(p.routed) / static_cast<double>(s.ep * s.etp);
  r.gemm = static_cast<double>(p.attention_split + p.dense_split + p.shared_split) / tp + r.routed;
  return r;
}

namespace {

// §6.4: offloaded states leave the device for the host. A CPU optimizer steps fp32 parameters on
// fp32 gradients: DeepSpeed's DeepSpeedCPUAdam takes an fp32 gradient partition and the fp32 master
// (stage_1_and_2.py keeps `single_partition_of_fp32_groups` on the CPU), Megatron's
// HybridDeviceOptimizer copies grads into fp32 CPU tensors, FSDP2's CPUOffloadPolicy moves the
// sharded (fp32) parameters and the reduced gradients to the CPU. So the host holds, per local
// optimizer element: the optimizer state β_opt (master included where the precision has one), 4 B
// of fp32 gradient, and without a master (fp32 parameters) the 4 B fp32 parameter copy it updates.
// Offloading parameters too moves the parameter shard itself (β_P, the master when β_master = 0).
void offload_states(ModelStates& m, double dense, double routed, const ZeroDivisors& z, const Run& run,
                    double beta_opt) {
  if (z.offload == Offload::none) return;
  const Precision& p = run.precision;
  constexpr double kFp32 = 4;
  const double os = m.optimizer_elements;
  if (z.offload == Offload::optimizer) {
    m.host = (beta_opt + kFp32 + (p.beta_master == 0 ? kFp32 : 0)) * os;
    m.optimizer = 0;
    return;
  }
  m.host = p.beta_P * (dense / z.P + routed / z.Pe) + kFp32 * (dense / z.G + routed / z.Ge) + beta_opt * os;
  m.weights = 0;
  m.grads = 0;
  m.optimizer = 0;
}

}  // namespace

// §6: β · ((ne + sh)/Z + rt/Z_e) for each state; tables use β_opt_table.
ModelStates model_states(const RankParams& r, const ZeroDivisors& z, const Run& run, bool table, bool keep_gathered) {
  const Precision& p = run.precision;
  const double dense = r.non_expert + r.shared;
  ModelStates m;
  m.weights = p.beta_P * (dense / z.P + r.routed / z.Pe);
  m.grads = p.beta_G * (dense / z.G + r.routed / z.Ge);
  m.optimizer_elements = dense / z.OS + r.routed / z.OSe;
  m.unsharded_elements = r.total();
  const double beta_opt = table ? run.beta_opt_table() : run.beta_opt();
  m.optimizer = run.options.offload_optimizer ? 0 : beta_opt * m.optimizer_elements;
  if (keep_gathered) m.gathered = p.beta_gather * r.total();
  // §6.2: the FP8 copies of the GEMM weights (fp8_weight_copies.hpp), beside the weights, or as
  // them under --fp8-param-gather, sharded as the weights are.
  const double fp8 = table ? 0 : run.options.fp8_weight_bytes;
  if (fp8 > 0 && run.options.fp8_param_gather) {
    m.weights += (fp8 - p.beta_P) * ((r.gemm - r.routed) / z.P + r.routed / z.Pe);
  } else {
    m.fp8_cache = fp8 * r.gemm;
  }
  offload_states(m, dense, r.routed, z, run, beta_opt);
  return m;
}

bool defers_grad_sync(const Run& run, const Strategy& s) {
  if (s.zero < 2) return false;  // gradients are not sharded: nothing is deferred
  return run.options.defer_grad_sync.value_or(run.profile.framework == Framework::torchtitan && s.pp > 1);
}

double optimizer_moments(const ModelStates& states, const Run& run) {
  if (states.optimizer <= 0) return 0;  // offloaded: none on the device
  return std::max(0.0, states.optimizer - run.precision.beta_master * states.optimizer_elements);
}

bool grads_built_in_backward(const Run& run, const Strategy& s) {
  return run.profile.grads_freed_before_step && s.num_microbatches == 1 && s.pp == 1;
}

bool backwards_grouped_by_chunk(const Strategy& s) { return s.vpp > 1 && s.schedule == Schedule::interleaved_1f1b; }

bool defers_chunk_by_chunk(const Run& run, const Strategy& s) {
  return defers_grad_sync(run, s) && backwards_grouped_by_chunk(s) && s.num_microbatches < 2 * s.pp;
}

bool reshards_after_forward(const Run& run, const Strategy& s) {
  switch (run.profile.reshard_after_forward) {
    case ReshardAfterForward::on: return true;
    case ReshardAfterForward::off: return false;
    case ReshardAfterForward::automatic: return s.pp == 1;
  }
  return true;
}

RankParams layer_rank_params(const Model& m, const Strategy& s, FfnKind ffn) {
  const std::int64_t kv_counted = m.attention == AttentionKind::gqa ? std::max(m.kv_heads, s.tp) : m.kv_heads;
  return rank_params(layer_params(m, ffn, kv_counted), s);
}

EndParams end_params(const Model& m, const Run& run, const Strategy& s) {
  const double h = static_cast<double>(m.hidden);
  const double tp = static_cast<double>(s.tp);
  const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));
  EndParams e;
  e.table = v_pad * h / tp;
  e.embedding.non_expert = e.table + static_cast<double>(m.positions) * h;
  e.vocab.non_expert = e.table;
  e.final_norm.non_expert = static_cast<double>(m.norm_params());
  e.mtp_extra.non_expert = static_cast<double>(mtp_extra_split(m)) / tp + static_cast<double>(mtp_extra_repl(m));
  return e;
}

}  // namespace meshfit
