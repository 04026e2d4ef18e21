#include "estimators/data_parallel_time.hpp"

#include <algorithm>
#include <cmath>

#include "estimators/strategy_rules.hpp"

namespace meshfit {

namespace {

// β_step: HBM bytes one optimizer step moves per locally updated parameter (§7.9).
double step_bytes(const Run& run) { return run.optimizer == Optimizer::sgd_momentum ? 26 : 38; }

// max(T − window, T/n): what a reduction or gather overlapped with a window leaves exposed,
// never below its last piece (§7.6).
double exposed(double t, double window, double pieces) {
  if (t <= 0) return 0;
  return std::max(t - window, t / std::max(1.0, pieces));
}

// Offloaded states (§7.9.1) cross the device's host link, a pinned-memory copy at
// η_host_link·B_host_link; a device without host figures cannot offload (strategy_rules).
double host_copy(const Device& d, double bytes) {
  return d.has_host() ? bytes / (d.eta_host_link * d.host_link_bandwidth) : 0;
}

// The CPU optimizer's step over `elements` local elements: a stream over host memory. Adam reads
// the fp32 parameter, gradient and two moments and writes the parameter and moments back (28 B),
// SGD with momentum 20 B, and both write the parameter in its device dtype for the copy back
// (β_P): DeepSpeed's cpu_adam kernel and Megatron's HybridDeviceOptimizer step this way.
double cpu_step(const Device& d, const Run& run, double elements) {
  const double bytes = (run.optimizer == Optimizer::sgd_momentum ? 20 : 28) + run.precision.beta_P;
  return d.has_host() ? elements * bytes / (d.eta_host_memory * d.host_memory_bandwidth) : 0;
}

}  // namespace

DataParallelGroups data_parallel_groups(const Model& m, const Run& run, const Device& d, const Strategy& s,
                                        bool split_ends) {
  DataParallelGroups g;
  const bool tree = run.options.latency_tree;
  g.z = zero_divisors(s, run);
  g.reduce = make_group(d, s.tp, s.dp * s.cp, tree);
  g.shard = make_group(d, s.tp, s.zero >= 1 ? s.shard_group : 1, tree);
  g.hsdp = s.zero >= 1 && s.shard_group < s.dp * s.cp;
  g.replicate = make_group(d, s.tp * s.shard_group, g.hsdp ? s.dp * s.cp / s.shard_group : 1, tree);
  g.expert_reduce = make_group(d, s.etp * s.ep, s.expert_dp(), tree);
  g.expert_shard = make_group(d, s.etp * s.ep, s.zero >= 1 ? static_cast<std::int64_t>(g.z.OSe) : 1, tree);
  g.reshard = reshards_after_forward(run, s);
  const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));
  g.table = v_pad * static_cast<double>(m.hidden) / static_cast<double>(s.tp);
  g.split_ends = split_ends;
  g.ends = make_group(d, s.tp * s.cp * s.dp * std::max<std::int64_t>(1, s.pp - 1), 2, tree);
  const double bucket_group = static_cast<double>(s.zero >= 2 ? s.shard_group : s.dp * s.cp);
  g.bucket_params = std::max(40e6, 1e6 * bucket_group);
  return g;
}

void data_parallel_time(StageTime& st, const StageParams& p, const DataParallelGroups& g, const Model& m,
                        const Run& run, const Device& d, const Strategy& s) {
  const Precision& pr = run.precision;
  const double P_d = p.P_d, P_e = p.P_e, units = p.units;
  // dp_overlap off (§7.6): no window, all of it exposed.
  const bool overlap = run.options.dp_overlap;
  const double win_f = overlap ? st.forward : 0, win_b = overlap ? st.backward + st.recompute : 0;
  const double n_b = std::ceil((P_d + P_e) / g.bucket_params);
  // With parameters offloaded (ZeRO-3 only), each gather starts by copying its shard in from the
  // host and each reduce-scatter ends by copying its shard out (FSDP2's CPUOffloadPolicy, ZeRO-3's
  // offload_param): in series with the collective they feed, so priced as part of it.
  const bool params_on_host = s.offload == Offload::params;
  const double copy_in = params_on_host ? host_copy(d, pr.beta_P * (P_d / g.z.P + P_e / g.z.Pe)) : 0;
  const double copy_out = params_on_host ? host_copy(d, pr.beta_gcomm * (P_d / g.z.G + P_e / g.z.Ge)) : 0;
  const double t_rs =
      reduce_scatter(g.shard, P_d * pr.beta_gcomm) + reduce_scatter(g.expert_shard, P_e * pr.beta_gcomm) + copy_out;
  const double t_ag =
      all_gather(g.shard, P_d * pr.beta_gather) + all_gather(g.expert_shard, P_e * pr.beta_gather) + copy_in;
  const double t_hsdp = g.hsdp ? all_reduce(g.replicate, P_d * pr.beta_gcomm / static_cast<double>(s.shard_group)) : 0;
  double c_red = 0, c_ag = 0;
  switch (s.zero) {
    case 0:
      c_red = exposed(all_reduce(g.reduce, P_d * pr.beta_gcomm) + all_reduce(g.expert_reduce, P_e * pr.beta_gcomm),
                      win_b, n_b);
      break;
    case 1:
      c_red = exposed(t_rs + t_hsdp, win_b, n_b);
      c_ag = exposed(t_ag, win_f, n_b);
      break;
    case 2:
      st.comm_zero = exposed(t_rs, win_b, n_b);
      c_red = exposed(t_hsdp, win_b, n_b);
      c_ag = exposed(t_ag, win_f, n_b);
      break;
    default:
      if (g.reshard) {
        st.comm_zero = exposed(t_ag, win_f, units) + exposed(t_ag + t_rs, win_b, units);
      } else {
        st.comm_zero = exposed(t_rs, win_b, units);
        c_ag = exposed(t_ag, win_f, units);
      }
      c_red = exposed(t_hsdp, win_b, n_b);
  }
  // Tied tables and the MTP embedding copy: one all-reduce between the two end stages.
  const double c_emb = (m.tie || m.mtp_depths > 0) && g.split_ends && (p.embedding || p.head)
                           ? all_reduce(g.ends, g.table * pr.beta_gcomm)
                           : 0;
  st.comm_dp = c_red + c_ag + c_emb;
  const double p_opt = s.zero >= 1 ? P_d / g.z.OS + P_e / g.z.OSe : P_d + P_e;
  switch (s.offload) {
    case Offload::none: st.optimizer = p_opt * step_bytes(run) / (d.eta_hbm * d.hbm_bandwidth); break;
    // ZeRO-Offload's step (Ren et al. 2021, §4.1): the gradient shard out, the CPU step, the
    // updated parameters back, in series and exposed (neither framework's default overlaps them).
    case Offload::optimizer:
      st.optimizer = host_copy(d, p_opt * pr.beta_G) + cpu_step(d, run, p_opt) + host_copy(d, p_opt * pr.beta_P);
      break;
    // Parameters and gradients already live on the host: only the CPU step remains.
    case Offload::params: st.optimizer = cpu_step(d, run, p_opt); break;
  }
  st.tau = st.forward + st.backward + st.recompute + st.comm_tp + st.comm_cp + st.comm_ep + st.comm_pp + st.comm_zero;
}

}  // namespace meshfit
