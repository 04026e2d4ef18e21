#include "estimators/strategy_rules.hpp"

#include <algorithm>
#include <array>
#include <iterator>

#include "estimators/pipeline_layout.hpp"

namespace meshfit {

const char* rule_id(HardRule r) {
  static const char* const ids[] = {"ok",  "H1",  "H2",  "H3",   "H4",  "H5",  "H6",  "H7",  "H8",  "H9",
                                    "H10", "H11", "H12", "H12b", "H13", "H14", "H15", "H16", "H17", "H18",
                                    "H19", "H20", "H21", "H22",  "H23", "H24", "H25", "S1",  "S2"};
  return ids[static_cast<int>(r)];
}

const char* rule_name(HardRule r) {
  // In HardRule's order (search-and-time.md §3.1's table).
  static const char* const names[] = {"ok",
                                      "grid_covers_devices",
                                      "batch_splits_evenly",
                                      "heads_divide_by_tp",
                                      "kv_heads_fit_tp",
                                      "ffn_divides_by_tp",
                                      "vocab_padded",
                                      "sp_needs_tp",
                                      "sp_sequence_divides",
                                      "cp_sequence_divides",
                                      "ulysses_heads_divide",
                                      "hybrid_degree_exists",
                                      "chunks_have_layers",
                                      "uneven_stages_divide",
                                      "vpp_needs_pp",
                                      "schedule_matches_vpp",
                                      "experts_divide_by_ep",
                                      "expert_grid_tiles",
                                      "moe_tp_needs_sp",
                                      "dense_has_no_ep",
                                      "shard_group_divides",
                                      "partial_recompute_needs_full",
                                      "listed_only",
                                      "dualpipev_microbatches",
                                      "interleaved_microbatches",
                                      "offload_has_a_host",
                                      "tp_overlap_needs_sp",
                                      "seed_m_ge_pp",
                                      "seed_optimizer_shard_whole"};
  static_assert(std::size(names) == static_cast<std::size_t>(HardRule::S2) + 1);
  return names[static_cast<int>(r)];
}

std::int64_t hybrid_ulysses_degree(const Model& m, const Strategy& s, std::int64_t D, bool kv_divisible) {
  if (m.heads % s.tp != 0) return 0;
  const std::int64_t heads_tp = m.heads / s.tp;
  for (std::int64_t u = s.cp - 1; u >= 2; --u) {
    if (s.cp % u != 0 || heads_tp % u != 0) continue;
    if (kv_divisible && m.kv_heads % (s.tp * u) != 0) continue;
    if (s.tp * u > D) continue;
    return u;
  }
  return 0;
}

std::int64_t padded_vocab(std::int64_t vocab, std::int64_t q, std::int64_t tp) {
  const std::int64_t unit = q * tp;
  return (vocab + unit - 1) / unit * unit;
}

bool rule_holds(HardRule rule, const Model& m, const Run& run, const Cluster& cluster, const Strategy& s) {
  const bool moe = m.is_moe();
  const std::int64_t tp = std::max<std::int64_t>(1, s.tp);
  switch (rule) {
    case HardRule::ok: return true;
    case HardRule::H1:  // the grid covers the devices
      return s.dp >= 1 && s.tp >= 1 && s.cp >= 1 && s.pp >= 1 && s.dp * s.tp * s.cp * s.pp == cluster.devices;
    case HardRule::H2:  // equal micro-batches on every replica
      return s.micro_batch >= 1 && s.num_microbatches >= 1 &&
             s.dp * s.micro_batch * s.num_microbatches == run.global_batch;
    case HardRule::H3: return m.heads % tp == 0;
    case HardRule::H4: return m.attention != AttentionKind::gqa || m.kv_heads % tp == 0 || tp % m.kv_heads == 0;
    case HardRule::H5: {
      const bool has_dense = m.moe_layer_count() < m.layers;
      return !(has_dense && m.ffn % tp != 0) && !(moe && (m.shared_experts * m.shared_expert_ffn) % tp != 0) &&
             !(moe && m.expert_ffn % std::max<std::int64_t>(1, s.etp) != 0);
    }
    case HardRule::H6: return true;  // holds by construction of V_pad
    case HardRule::H7: return !(s.sp && s.tp == 1);
    case HardRule::H8: return !(s.sp && (run.seq % s.cp != 0 || (run.seq / s.cp) % tp != 0));
    case HardRule::H9:
      if (s.cp > 1) {
        return s.cp_algo != CpAlgo::none && run.seq % s.cp == 0 &&
               (s.cp_algo == CpAlgo::ulysses || run.seq % (2 * s.cp) == 0);
      }
      return s.cp_algo == CpAlgo::none;
    case HardRule::H10:
      if (s.cp_algo == CpAlgo::ulysses) return (m.heads / tp) % s.cp == 0;
      if (s.cp_algo == CpAlgo::hybrid) return s.cp_u >= 1 && (m.heads / tp) % s.cp_u == 0;
      return true;
    case HardRule::H11: return s.cp_algo != CpAlgo::hybrid || (s.cp_u >= 2 && s.cp_u < s.cp && s.cp % s.cp_u == 0);
    case HardRule::H12: {  // every virtual stage holds a layer or the embedding/loss slot
      const std::int64_t slots =
          m.layers + (run.options.account_embedding ? 1 : 0) + (run.options.account_loss ? 1 : 0);
      return s.pp * s.vpp <= slots;
    }
    case HardRule::H12b: return layout_counts_valid(m, run, s);
    case HardRule::H13: return !(s.vpp >= 2 && s.pp < 2);
    case HardRule::H14:  // the schedule is defined by the chunking
      if (s.pp == 1) return s.schedule == Schedule::none && s.vpp == 1;
      switch (s.schedule) {
        case Schedule::none: return false;
        case Schedule::interleaved_1f1b: return s.vpp >= 2;
        case Schedule::dualpipev: return s.vpp == 2;
        default: return s.vpp == 1;
      }
    case HardRule::H15: return !moe || m.experts % s.ep == 0;
    case HardRule::H16: {
      if (!moe) return true;
      // memory-model.md §3.1: the run option expert_shard_group replaces G_e = G·tp/(ep·etp) and
      // must divide the expert data-parallel group.
      if (const auto& Ge = run.options.expert_shard_group; Ge && s.zero >= 1) {
        const bool grid = run.profile.expert_rule == ExpertRule::torchtitan ? s.etp == 1 && s.stage_ranks() % s.ep == 0
                                                                            : s.stage_ranks() % (s.ep * s.etp) == 0;
        return grid && s.expert_dp() % *Ge == 0;
      }
      if (run.profile.expert_rule == ExpertRule::torchtitan) {
        const std::int64_t G = s.zero >= 1 ? s.shard_group : s.dp * s.cp;
        return s.etp == 1 && (G * s.tp) % s.ep == 0;
      }
      return s.stage_ranks() % (s.ep * s.etp) == 0 && !(s.zero >= 1 && (s.shard_group * s.tp) % (s.ep * s.etp) != 0);
    }
    case HardRule::H17: return !moe || !(s.tp > 1 && !s.sp);
    case HardRule::H18: return moe || (s.ep == 1 && s.etp == 1);
    case HardRule::H19:
      if (s.zero < 0 || s.zero > 3) return false;
      if (const auto& o = run.options.shard_override; o.set()) {  // each divisor shards the DP·CP group
        const std::int64_t dpcp = s.dp * s.cp;
        if (dpcp % o.P != 0 || dpcp % o.G != 0 || dpcp % o.OS != 0) return false;
      }
      if (s.zero >= 1) return s.shard_group >= 2 && (s.dp * s.cp) % s.shard_group == 0;
      return s.shard_group == 1;
    case HardRule::H20: return s.recompute_layers >= 0 && !(s.recompute_layers != 0 && s.recompute != Recompute::full);
    case HardRule::H21: return true;  // values only when listed: the search's concern
    case HardRule::H22: return !(s.schedule == Schedule::dualpipev && s.num_microbatches < 2 * s.pp);
    case HardRule::H23:
      return !(s.schedule == Schedule::interleaved_1f1b &&
               (s.num_microbatches < s.pp || s.num_microbatches % s.pp != 0));
    case HardRule::H24:
      // Every framework offloads the optimizer's shard (ZeRO-Offload, Megatron's distributed
      // optimizer) and parameters only when they are sharded (FSDP2, ZeRO-3); the host side must be
      // stated to be priced, and the seed rules price only their own swap flag.
      if (s.offload == Offload::none) return true;
      if (!cluster.device.has_host() || run.rules == Rules::sapp_nd) return false;
      return s.offload == Offload::optimizer ? s.zero >= 1 : s.zero == 3;
    case HardRule::H25:
      // Megatron asserts --sequence-parallel for --tp-comm-overlap, and torchtitan's AsyncTP
      // rewrites the all-gather/reduce-scatter pairs of its sequence-parallel plan: the overlap
      // decomposes SP's collectives. DeepSpeed has no such overlap; the seed prices none.
      if (!s.tp_comm_overlap) return true;
      return s.tp > 1 && s.sp && run.profile.framework != Framework::deepspeed && run.rules != Rules::sapp_nd;
    case HardRule::S1: return run.rules != Rules::sapp_nd || s.pp == 1 || s.num_microbatches >= s.pp;
    case HardRule::S2: return run.rules != Rules::sapp_nd || s.zero == 0 || (s.tp * s.shard_group) % s.cp == 0;
  }
  return true;
}

namespace {
constexpr std::array<HardRule, 28> kRuleOrder = {
    HardRule::H1,  HardRule::H2,  HardRule::H3,  HardRule::H4,  HardRule::H5,  HardRule::H6,   HardRule::H7,
    HardRule::H8,  HardRule::H9,  HardRule::H10, HardRule::H11, HardRule::H12, HardRule::H12b, HardRule::H13,
    HardRule::H14, HardRule::H15, HardRule::H16, HardRule::H17, HardRule::H18, HardRule::H19,  HardRule::H20,
    HardRule::H21, HardRule::H22, HardRule::H23, HardRule::H24, HardRule::H25, HardRule::S1,   HardRule::S2};
}  // namespace

std::span<const HardRule> hard_rule_order() { return kRuleOrder; }

HardRule first_broken_rule(const Model& m, const Run& run, const Cluster& cluster, const Strategy& s) {
  for (HardRule r : kRuleOrder) {
    if (!rule_holds(r, m, run, cluster, s)) return r;
  }
  return HardRule::ok;
}

std::vector<HardRule> broken_rules(const Model& m, const Run& run, const Cluster& cluster, const Strategy& s) {
  std::vector<HardRule> out;
  for (HardRule r : kRuleOrder) {
    if (!rule_holds(r, m, run, cluster, s)) out.push_back(r);
  }
  return out;
}

std::string explain_rule(HardRule r, const Model& m, const Run& run, const Cluster& cluster, const Strategy& s) {
  using std::to_string;
  switch (r) {
    case HardRule::ok: return "valid";
    case HardRule::H1:
      return "H1: dp·tp·cp·pp = " + to_string(s.dp) + "·" + to_string(s.tp) + "·" + to_string(s.cp) + "·" +
             to_string(s.pp) + " must equal the " + to_string(cluster.devices) + " devices";
    case HardRule::H2:
      return "H2: dp·mbs·m = " + to_string(s.dp) + "·" + to_string(s.micro_batch) + "·" +
             to_string(s.num_microbatches) + " must equal the global batch " + to_string(run.global_batch);
    case HardRule::H3: return "H3: tp " + to_string(s.tp) + " must divide the " + to_string(m.heads) + " query heads";
    case HardRule::H4:
      return "H4: tp " + to_string(s.tp) + " and the " + to_string(m.kv_heads) +
             " key/value heads must divide one another";
    case HardRule::H5:
      return "H5: tp " + to_string(s.tp) + " must divide the FFN width (and the shared-expert width), and etp " +
             to_string(s.etp) + " the expert width";
    case HardRule::H6: return "H6: padded vocabulary";
    case HardRule::H7: return "H7: sp needs tp > 1";
    case HardRule::H8:
      return "H8: with sp, tp " + to_string(s.tp) + " must divide the tokens per CP rank s/cp = " + to_string(run.seq) +
             "/" + to_string(s.cp);
    case HardRule::H9:
      return "H9: cp " + to_string(s.cp) +
             " needs a cp_algo, s mod cp = 0, and for ring/hybrid/allgather s mod 2·cp = 0 (s = " + to_string(run.seq) +
             "); cp_algo only with cp > 1";
    case HardRule::H10:
      return "H10: the " + to_string(m.heads / std::max<std::int64_t>(1, s.tp)) +
             " heads per TP rank must divide by the Ulysses degree";
    case HardRule::H11: return "H11: hybrid CP needs a Ulysses degree cp_u with 2 <= cp_u < cp dividing cp";
    case HardRule::H12:
      return "H12: pp·vpp = " + to_string(s.pp * s.vpp) + " virtual stages exceed the " + to_string(m.layers) +
             " layers";
    case HardRule::H12b:
      return "H12b: layers_per_vstage must have pp·vpp non-negative entries summing to the layers, first/last stage "
             "counts must leave an exact split with at least vpp layers per stage, and full_layers_per_vstage must "
             "have pp·vpp entries none above its virtual stage's layers" +
             // The MTP clause only where a layout string named depths (RunOptions::layout_mtp_depths).
             (run.options.layout_mtp_depths >= 0
                  ? "; a pipeline_layout string must name the model's " + to_string(m.mtp_depths) + " MTP depths"
                  : std::string());
    case HardRule::H13: return "H13: vpp >= 2 needs pp >= 2";
    case HardRule::H14:
      return std::string("H14: schedule ") + to_string(s.schedule) + " does not match pp " + to_string(s.pp) +
             " and vpp " + to_string(s.vpp) +
             " (interleaved_1f1b needs vpp >= 2, dualpipev vpp = 2, 1f1b/gpipe/zb_h1 vpp = 1, pp = 1 no schedule)";
    case HardRule::H15:
      return "H15: ep " + to_string(s.ep) + " must divide the " + to_string(m.experts) + " routed experts";
    case HardRule::H16:
      if (run.options.expert_shard_group && s.zero >= 1) {
        return "H16: ep·etp = " + to_string(s.ep * s.etp) + " must divide dp·cp·tp = " + to_string(s.stage_ranks()) +
               " and expert_shard_group " + to_string(*run.options.expert_shard_group) +
               " must divide the expert data-parallel group dp·cp·tp/(ep·etp)";
      }
      return "H16: ep·etp = " + to_string(s.ep * s.etp) + " must divide dp·cp·tp = " + to_string(s.stage_ranks()) +
             " and, with ZeRO, shard_group·tp = " + to_string(s.shard_group * s.tp) +
             (run.profile.expert_rule == ExpertRule::torchtitan ? " (torchtitan: etp = 1)" : "");
    case HardRule::H17: return "H17: an MoE model with tp > 1 needs sp";
    case HardRule::H18: return "H18: a dense model has ep = etp = 1";
    case HardRule::H19:
      if (const auto& o = run.options.shard_override;
          o.set() && (s.dp * s.cp) % o.P + (s.dp * s.cp) % o.G + (s.dp * s.cp) % o.OS != 0) {
        return "H19: shard_override {P: " + to_string(o.P) + ", G: " + to_string(o.G) + ", OS: " + to_string(o.OS) +
               "} must divide dp·cp = " + to_string(s.dp * s.cp);
      }
      return "H19: zero " + to_string(s.zero) + " with shard_group " + to_string(s.shard_group) +
             ": ZeRO >= 1 needs a shard group of at least 2 dividing dp·cp = " + to_string(s.dp * s.cp) +
             "; zero 0 has shard_group 1";
    case HardRule::H20: return "H20: recompute_layers only with recompute=full, and at least 1";
    case HardRule::H21: return "H21: value not listed";
    case HardRule::H22: return "H22: dualpipev needs m >= 2·pp (m = " + to_string(s.num_microbatches) + ")";
    case HardRule::H23:
      return "H23: interleaved_1f1b needs m >= pp and m mod pp = 0 (m = " + to_string(s.num_microbatches) +
             ", pp = " + to_string(s.pp) + ")";
    case HardRule::H24:
      if (run.rules == Rules::sapp_nd)
        return "H24: offload=" + std::string(to_string(s.offload)) +
               " is not priced under --rules sapp-nd (its run option offload_optimizer is)";
      if (!cluster.device.has_host()) {
        return "H24: offload=" + std::string(to_string(s.offload)) + " needs the device's host_memory, " +
               "host_link_bandwidth and host_memory_bandwidth; device " + cluster.device.name + " states no host side";
      }
      return "H24: offload=optimizer needs zero >= 1, offload=params needs zero 3 (zero = " + to_string(s.zero) + ")";
    case HardRule::H25:
      if (run.rules == Rules::sapp_nd) return "H25: tp_comm_overlap is not priced under --rules sapp-nd";
      if (run.profile.framework == Framework::deepspeed)
        return "H25: tp_comm_overlap has no DeepSpeed counterpart (Megatron's --tp-comm-overlap, torchtitan's AsyncTP)";
      return "H25: tp_comm_overlap needs tp > 1 with sp=true (tp = " + to_string(s.tp) +
             ", sp = " + (s.sp ? "true" : "false") + ")";
    case HardRule::S1:
      return "S1 (--rules sapp-nd): m >= pp is required (m = " + to_string(s.num_microbatches) +
             ", pp = " + to_string(s.pp) + ")";
    case HardRule::S2:
      return "S2 (--rules sapp-nd): the optimizer-shard degree tp·shard_group/cp = " + to_string(s.tp * s.shard_group) +
             "/" + to_string(s.cp) + " must be whole";
  }
  return "?";
}

}  // namespace meshfit
