#include "search/rule_plan.hpp"

#include <algorithm>

#include "search/search_space.hpp"

namespace meshfit {

std::uint32_t hard_rule_reads(HardRule r) {
  constexpr std::uint32_t grid = kTp | kCp | kPp;  // dp = N/(tp·cp·pp)
  switch (r) {
    case HardRule::ok: return 0;
    case HardRule::H1: return grid;
    case HardRule::H2: return grid | kMicroBatch;
    case HardRule::H3: return kTp;
    case HardRule::H4: return kTp;
    case HardRule::H5: return kTp | kEtp;
    case HardRule::H6: return 0;
    case HardRule::H7: return kSp | kTp;
    case HardRule::H8: return kSp | kCp | kTp;
    case HardRule::H9: return kCp | kCpAlgo;
    case HardRule::H10: return kCpAlgo | kCp | kTp;
    case HardRule::H11: return kCpAlgo | kCp;
    case HardRule::H12: return kPp | kVpp;
    case HardRule::H12b: return kPp | kVpp | kSchedule;
    case HardRule::H13: return kPp | kVpp;
    case HardRule::H14: return kPp | kVpp | kSchedule;
    case HardRule::H15: return kEp;
    case HardRule::H16: return grid | kEp | kEtp | kZero | kShardGroup;
    case HardRule::H17: return kTp | kSp;
    case HardRule::H18: return kEp | kEtp;
    case HardRule::H19: return grid | kZero | kShardGroup;
    case HardRule::H20: return kRecompute;  // and n_rc
    case HardRule::H21: return 0;
    case HardRule::H22: return grid | kSchedule | kMicroBatch;
    case HardRule::H23: return grid | kSchedule | kMicroBatch;
    case HardRule::H24: return kZero | kOffload;
    case HardRule::H25: return kTp | kSp | kTpOverlap;
    case HardRule::S1: return grid | kMicroBatch;
    case HardRule::S2: return grid | kZero | kShardGroup;
  }
  return ~0u;
}

namespace {

int level_of(std::uint32_t reads, bool moe) {
  if (!moe) reads &= ~(kEp | kEtp);  // fixed at 1 before the loops
  if (reads & (kZero | kShardGroup | kOffload)) return zero_level;
  if (reads & kEtp) return etp_level;
  if (reads & kEp) return ep_level;
  if (reads & (kVpp | kSchedule)) return pass_level;
  if (reads & kCpAlgo) return algo_level;
  if (reads & (kSp | kTpOverlap)) return sp_level;  // tp_comm_overlap is walked with sp
  return triple_level;
}

}  // namespace

RulePlan make_rule_plan(const SearchSpace& space, bool etp_domain_ok) {
  const bool moe = space.model->is_moe();
  RulePlan plan;
  for (HardRule r : hard_rule_order()) {
    std::uint32_t reads = hard_rule_reads(r);
    // The enumeration keeps n_rc = 0, for which H20 holds in every mode: it never fails.
    if (r == HardRule::H20) continue;
    if (r == HardRule::H5 && etp_domain_ok) reads &= ~kEtp;  // evaluated with etp = 1
    plan.rules.push_back({static_cast<std::size_t>(r), level_of(reads, moe), (reads & kMicroBatch) != 0});
  }
  const std::uint32_t given = space.pins.given();
  for (std::size_t i = 0; i < kPolicyCount; ++i) {
    const Policy p = static_cast<Policy>(i);
    if (!space.policies.enabled(p)) continue;
    const std::uint32_t reads = policy_reads(p);
    if ((given & reads) == reads) continue;         // every dimension it reads was given (§2.3)
    if (p == Policy::full_recompute_all) continue;  // holds by construction: n_rc is enumerated only when it is off
    plan.rules.push_back({kHardRuleSlots + i, level_of(reads, moe), (reads & kMicroBatch) != 0});
  }
  std::vector<std::uint32_t> reads_of;  // per planned rule, what it reads
  for (HardRule r : hard_rule_order()) {
    if (r == HardRule::H20) continue;
    std::uint32_t reads = hard_rule_reads(r);
    if (r == HardRule::H5 && etp_domain_ok) reads &= ~kEtp;
    reads_of.push_back(reads);
  }
  for (std::size_t i = 0; i < kPolicyCount; ++i) {
    const Policy p = static_cast<Policy>(i);
    if (!space.policies.enabled(p)) continue;
    const std::uint32_t reads = policy_reads(p);
    if ((given & reads) == reads || p == Policy::full_recompute_all) continue;
    reads_of.push_back(reads);
  }
  constexpr std::uint32_t fixed =
      kTp | kCp | kPp | kZero | kShardGroup | kOffload;  // a ZeRO setting includes its offload
  for (std::size_t k = 0; k < plan.rules.size(); ++k) {
    plan.at[2 * static_cast<std::size_t>(plan.rules[k].level) + (plan.rules[k].reads_b ? 1 : 0)].push_back(k);
    if (plan.rules[k].level == zero_level && !plan.rules[k].reads_b) {
      (((reads_of[k] & ~fixed) == 0) ? plan.zero_fixed : plan.zero_rest).push_back(k);
      if ((reads_of[k] & ~(fixed | kEp | kEtp)) != 0) plan.zero_rest_reads_experts_only = false;
    }
  }
  // What the loops between the triple and a level set, besides the level's key (rule_plan.hpp).
  constexpr std::uint32_t above_pass = kSp | kTpOverlap | kCpAlgo;
  constexpr std::uint32_t above_experts = above_pass | kVpp | kSchedule;
  plan.keyed[pass_level] = plan.keyed[ep_level] = plan.keyed[etp_level] = true;
  for (std::size_t k = 0; k < plan.rules.size(); ++k) {
    const int level = plan.rules[k].level;
    if (level == pass_level && (reads_of[k] & above_pass) != 0) plan.keyed[pass_level] = false;
    if ((level == ep_level || level == etp_level) && (reads_of[k] & above_experts) != 0) {
      plan.keyed[static_cast<std::size_t>(level)] = false;
    }
  }
  for (int level = 0; level < kLevels; ++level) {
    plan.deeper[static_cast<std::size_t>(level)] = plan.rules.size();
    for (std::size_t k = 0; k < plan.rules.size(); ++k) {
      if (plan.rules[k].level > level) {
        plan.deeper[static_cast<std::size_t>(level)] = k;
        break;
      }
    }
  }
  return plan;
}

std::size_t first_failing(const SearchSpace& space, const RulePlan& plan, int level, bool per_b, const Strategy& s,
                          std::size_t bound) {
  return first_failing_in(space, plan, plan.at[2 * static_cast<std::size_t>(level) + (per_b ? 1 : 0)], s, bound);
}

std::size_t first_failing_in(const SearchSpace& space, const RulePlan& plan, const std::vector<std::size_t>& list,
                             const Strategy& s, std::size_t bound) {
  for (std::size_t k : list) {
    if (k >= bound) break;
    if (!space.slot_holds(plan.rules[k].slot, s)) return k;
  }
  return RulePlan::kNone;
}

}  // namespace meshfit
