#include "search/policies.hpp"

#include <algorithm>
#include <numeric>

#include "search/trainer_targets.hpp"

namespace meshfit {

namespace {
bool power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
const char* const kNames[] = {"tp_in_node",           "tpcp_in_node",  "ep_in_node",      "powers_of_two",
                              "sp_with_tp",           "even_split",    "m_ge_pp",         "kv_heads_divisible",
                              "ulysses_kv_divisible", "cp_min_tokens", "hsdp_candidates", "full_recompute_all",
                              "megatron_target",      "trainer_target"};
const char* const kIds[] = {"P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10", "P11", "P12", "P13", "P14"};
}  // namespace

const char* policy_name(Policy p) { return kNames[static_cast<std::size_t>(p)]; }
const char* policy_id(Policy p) { return kIds[static_cast<std::size_t>(p)]; }

std::optional<Policy> policy_by_name(const std::string& name) {
  for (std::size_t i = 0; i < kPolicyCount; ++i) {
    if (name == kNames[i] || name == kIds[i]) return static_cast<Policy>(i);
  }
  return std::nullopt;
}

std::uint32_t policy_reads(Policy p) {
  switch (p) {
    case Policy::tp_in_node: return kTp;
    case Policy::tpcp_in_node: return kTp | kCp;
    case Policy::ep_in_node: return kEp | kEtp;
    case Policy::powers_of_two: return kTp | kCp | kEp | kEtp | kMicroBatch;
    case Policy::sp_with_tp: return kTp | kSp;
    case Policy::even_split: return kPp | kVpp;
    case Policy::m_ge_pp: return kPp | kMicroBatch | kTp | kCp;  // m is given when dp and b are
    case Policy::kv_heads_divisible: return kTp;
    case Policy::ulysses_kv_divisible: return kTp | kCp | kCpAlgo;
    case Policy::cp_min_tokens: return kCp;
    case Policy::hsdp_candidates: return kZero | kShardGroup;
    case Policy::full_recompute_all: return kRecompute;
    case Policy::megatron_target: return kZero | kPp | kEp;
    case Policy::trainer_target: return kTp | kSp | kCp | kCpAlgo | kPp | kVpp | kSchedule | kEp | kZero | kShardGroup;
  }
  return 0;
}

bool policy_holds(Policy p, const Model& m, const Run& run, const Cluster& c, const Strategy& s) {
  const std::int64_t D = c.device.placement_domain();
  switch (p) {
    case Policy::tp_in_node: return s.tp <= D && D % s.tp == 0;
    case Policy::tpcp_in_node: return s.tp * s.cp <= D && D % (s.tp * s.cp) == 0;
    case Policy::ep_in_node: return s.ep * s.etp <= D;
    case Policy::powers_of_two:
      return power_of_two(s.tp) && power_of_two(s.cp) && power_of_two(s.ep) && power_of_two(s.etp) &&
             power_of_two(s.micro_batch);
    case Policy::sp_with_tp: return s.tp == 1 || s.sp;
    case Policy::even_split: {
      const std::int64_t slots =
          m.layers + (run.options.account_embedding ? 1 : 0) + (run.options.account_loss ? 1 : 0);
      return slots % (s.pp * s.vpp) == 0;
    }
    case Policy::m_ge_pp: return s.pp == 1 || s.num_microbatches >= s.pp;
    case Policy::kv_heads_divisible: return m.kv_heads % s.tp == 0;
    case Policy::ulysses_kv_divisible:
      if (s.cp_algo == CpAlgo::ulysses) return m.kv_heads % (s.tp * s.cp) == 0;
      if (s.cp_algo == CpAlgo::hybrid) return m.kv_heads % (s.tp * s.cp_u) == 0;
      return true;
    case Policy::cp_min_tokens: return s.cp == 1 || run.seq / s.cp >= 1024;
    case Policy::hsdp_candidates: {
      if (s.zero == 0) return true;
      // g_node: the largest divisor j of dp with j·tp·cp ≤ D. Only j ≤ D/(tp·cp) can qualify, so
      // the loop is bounded by the node size, not by dp (which reaches 16,384).
      std::int64_t g_node = 1;
      const std::int64_t j_max = std::min(s.dp, D / (s.tp * s.cp));
      for (std::int64_t j = 1; j <= j_max; ++j) {
        if (s.dp % j == 0) g_node = j;
      }
      return s.shard_group == s.dp * s.cp || s.shard_group == g_node * s.cp;
    }
    case Policy::full_recompute_all: return true;
    case Policy::megatron_target: return s.zero != 3 || (s.pp == 1 && s.ep == 1);
    case Policy::trainer_target: return !run.target || !trainer_refusal(*run.target, m, run, s);
  }
  return true;
}

}  // namespace meshfit
