// The strategy space of docs/spec/search-and-time.md §2: free domains per dimension, user pins
// (§2.3), the validity rules in table order (hard rules §3.1, then policies §3.2).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"
#include "estimators/strategy_rules.hpp"
#include "search/policies.hpp"
#include "search/rule_plan.hpp"

namespace meshfit {

// Values the user restricted a dimension to; empty = free.
struct Pins {
  std::vector<std::int64_t> tp, cp, pp, vpp, ep, etp, zero, shard_group, micro_batch;
  std::vector<bool> sp;
  std::vector<CpAlgo> cp_algo;
  std::vector<Schedule> schedule;
  std::vector<Recompute> recompute;
  // Unlike the others, empty = none only: offload is searched when asked for (issue 23).
  std::vector<Offload> offload;
  // So is TP communication overlap (empty = off only): it trades buffers for time where tp > 1.
  std::vector<bool> tp_comm_overlap;
  std::uint32_t given() const;  // Dim bits of the pinned dimensions (dp counts given with tp, cp, pp)
};

// The first failing rule of a candidate: a hard rule, or a policy (histogram slot).
struct RuleSlot {
  bool policy = false;
  HardRule hard = HardRule::ok;
  Policy soft = Policy::tp_in_node;
};
inline constexpr std::size_t kRuleSlots = kHardRuleSlots + kPolicyCount;  // HardRule values incl. ok, then policies
std::size_t slot_index(const RuleSlot& r);
std::string slot_name(std::size_t index);  // the rule's or policy's name ("chunks_have_layers", "tp_in_node")
std::string slot_id(std::size_t index);    // its code in the spec's tables ("H12", "P1")

// Where a candidate sits in the innermost loops: the recompute modes (outer) and the micro-batch
// sizes (inner, rising). No validity rule reads the recompute mode, so a rule outcome found for
// mode 0 holds for the same b in every other mode.
struct Position {
  bool first;              // the first b visited in a run with everything else fixed
  std::size_t b_index;     // index into the micro-batch sizes (TripleDomains::bs)
  std::size_t mode_index;  // 0 for the first recompute mode enumerated
  // How many candidates this one stands for. Above 1 only for a vpp with pp·vpp > L_eff: such a
  // candidate fails H12 unless one of H2–H11 fails first, and none of those reads vpp or the
  // schedule, so one vpp of that tail speaks for all of them (ruling 7: the histogram counts each).
  std::int64_t weight;
  // The first failing rule's histogram slot (slot_index), or kValid.
  std::size_t failed;
  static constexpr std::size_t kValid = SIZE_MAX;
};

struct TripleWalkStorage;

struct SearchSpace {
  const Model* model = nullptr;
  const Run* run = nullptr;
  const Cluster* cluster = nullptr;
  Pins pins;
  PolicySet policies;
  bool weighted_tails = true;  // enumerate the H12 tail of vpp once, weighted (see Position)
  bool prune_subtrees = true;  // skip a subtree whose first failing rule is known (rule_plan.hpp)

  // Ordered (tp, cp, pp) triples whose product divides N, within the pins (the parallel split).
  std::vector<std::array<std::int64_t, 3>> triples() const;
  // Enumerates every canonical candidate of a triple; for fixed other values the micro-batch size
  // rises. `visit(strategy, position)` gets derived fields filled (m = 0 when gb mod dp·b ≠ 0).
  // `position.failed` is the candidate's first failing rule (rule_plan.hpp). With prune_subtrees,
  // a subtree whose every candidate's first failure is known is not descended into:
  // `reject(slot_index, count)` gets its candidates instead, credited as ruling 7 says.
  template <class Visit, class Reject>
  void for_each(const std::array<std::int64_t, 3>& triple, Visit&& visit, Reject&& reject) const;
  // The same, working in the caller's `storage` (search_space_enumerate.hpp), made for this space.
  template <class Visit, class Reject>
  void for_each(const std::array<std::int64_t, 3>& triple, TripleWalkStorage& storage, Visit&& visit,
                Reject&& reject) const;
  // The first failing rule in table order, or nullopt for a valid candidate.
  std::optional<RuleSlot> first_failure(const Strategy& s) const;
  bool slot_holds(std::size_t slot_index, const Strategy& s) const;
  // Throws std::invalid_argument naming a pinned value outside its free domain.
  void check_pins() const;
};

std::vector<std::int64_t> divisors(std::int64_t n);

}  // namespace meshfit

#include "search/search_space_enumerate.hpp"
