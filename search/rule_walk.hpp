// The rule plan (rule_plan.hpp) evaluated along the enumeration's path through one triple. At each
// level of the loop nest (triple, sp, CP algorithm, pass, ep, etp, ZeRO setting) it keeps the first
// failing rule of the node so far (`first`) and, per micro-batch size, that of the rules reading b
// (the level's row); a subtree whose every candidate's first failure is then known is credited to
// its rules (ruling 7) through `reject` instead of being walked. The loop nest that drives it is
// SearchSpace::for_each (search_space_enumerate.hpp); include that header, not this one. Its
// storage is a RuleWalkState (rule_walk_state.hpp) the thread keeps from triple to triple.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "estimators/strategy.hpp"
#include "search/rule_plan.hpp"
#include "search/rule_walk_state.hpp"
#include "search/triple_domains.hpp"

namespace meshfit {

template <class Reject>
class RuleWalk {
 public:
  using Groups = space_detail::Groups;
  using Keyed = space_detail::Keyed;
  using ZeroOutcome = space_detail::ZeroOutcome;
  using ZeroSummary = space_detail::ZeroSummary;
  static constexpr std::size_t kUnknown = space_detail::kUnknown;

  // `s` is the loop nest's candidate: the walk reads the fields set above the level it enters and
  // sets b and m while evaluating rows.
  RuleWalk(const SearchSpace& space, const RulePlan& plan, const TripleDomains& d, space_detail::RuleWalkState& w,
           bool prune_subtrees, Strategy& s, Reject& reject)
      : space_(space),
        plan_(plan),
        d_(d),
        w_(w),
        prune_(prune_subtrees),
        s_(s),
        reject_(reject),
        nb_count_(d.bs.size()),
        cache_rest_(plan.zero_rest_reads_experts_only),
        defer_zero_credit_(plan.at[2 * static_cast<std::size_t>(zero_level) + 1].empty()),
        fast_zero_(cache_rest_ && defer_zero_credit_ && prune_subtrees) {
    w.first_b.assign(static_cast<std::size_t>(kLevels) * nb_count_, RulePlan::kNone);
    w.no_failure.assign(1, {RulePlan::kNone, static_cast<std::int64_t>(nb_count_)});
    // The ZeRO level's rules that read only the triple and (z, G), per ZeRO setting: once here
    // rather than under every (sp, algorithm, pass, ep, etp) (rule_plan.hpp, zero_fixed).
    w.zero_first.assign(d.zeros.size(), RulePlan::kNone);
    for (std::size_t i = 0; i < d.zeros.size(); ++i) {
      Strategy t = s;
      t.zero = d.zeros[i].zero;
      t.shard_group = d.zeros[i].shard_group;
      t.offload = d.zeros[i].offload;
      w.zero_first[i] = first_failing_in(space, plan, plan.zero_fixed, t, RulePlan::kNone);
    }
    // The zero_rest outcome per (ep, etp, ZeRO setting) when it reads nothing else (rule_plan.hpp),
    // found at the first (sp, algorithm, pass) that reaches it: kUnknown until then. The first
    // failing rule of a list without a bound, cut at the caller's bound, is the one with it.
    w.rest_first.assign(cache_rest_ ? d.eps.size() * d.etps.size() * d.zeros.size() : 0, kUnknown);
    w.zero_credit.assign(plan.rules.size(), 0);
    w.zero_credited.clear();
    w.use_keyed(pass_level, plan.keyed[pass_level] ? static_cast<std::size_t>(d.passes + 1) : 0);
    w.use_keyed(ep_level, plan.keyed[ep_level] ? d.eps.size() : 0);
    w.use_keyed(etp_level, plan.keyed[etp_level] ? d.eps.size() * d.etps.size() : 0);
    w.all_zero_indices.resize(d.zeros.size());
    for (std::size_t i = 0; i < d.zeros.size(); ++i) w.all_zero_indices[i] = i;
    w.use_summaries(fast_zero_ ? d.eps.size() * d.etps.size() : 0);
  }

  // The indices of the pass, ep and etp in force (the keys of the keyed levels), set by the loop nest.
  std::size_t pass_index = 0, ep_index = 0, etp_index = 0;

  // Evaluates the rules of `level` at this node; true when the subtree (`per_b` candidates per
  // micro-batch size) is decided and has been credited to its rules instead of being walked.
  bool enter(int level, std::int64_t per_b);

  // At an (ep, etp) node, before its ZeRO loop: the ZeRO settings to walk. When the ZeRO level's
  // rules are all known per (ep, etp, ZeRO setting), each setting's first failing rule there reads
  // only those and what failed above, so the settings decided at the level are credited per rule
  // in bulk here (zero_summary, zero_outcome) and only the others are returned; otherwise all.
  const std::vector<std::size_t>& zero_settings(std::int64_t per_b);
  // The ZeRO setting `zero_index` (s's z and G set): true when its subtree is decided and credited.
  bool enter_zero(std::size_t zero_index, std::int64_t per_b);
  // After the ZeRO loop: the credits deferred to the etp level's row, spread over it.
  void credit_zero();
  // Under a ZeRO setting, the micro-batch sizes with no failure known (by index, rising); those
  // failing are credited (`per_b` candidates each: every recompute mode, as no rule reads it).
  const std::vector<std::size_t>& sizes_to_visit(std::int64_t per_b);
  // The first failing rule (index into the plan's rules) of the leaf with size `bi`, or kNone.
  std::size_t leaf_rule(std::size_t bi) const {
    const auto Z = static_cast<std::size_t>(zero_level);
    return std::min(first_[Z], row_[Z][bi]);
  }

 private:
  void set_b(std::size_t bi) {
    s_.micro_batch = d_.bs[bi];
    s_.num_microbatches = d_.ms[bi];
  }
  // A size's first failing rule appended to a row's minimum and run-length groups.
  static void extend_row(Groups& g, std::size_t& min_b, std::size_t f) {
    min_b = std::min(min_b, f);
    if (!g.empty() && g.back().first == f) {
      ++g.back().second;
    } else {
      g.emplace_back(f, 1);
    }
  }
  // A decided subtree whose sizes fail different rules: each run of sizes credited to the first
  // failing rule of (this node, that size), consecutive runs of one rule together.
  void credit_groups(const Groups& groups, std::size_t node_first, std::int64_t per_b) {
    std::size_t slot = SIZE_MAX;
    std::int64_t n = 0;
    for (const auto& [f, count] : groups) {
      const std::size_t next = plan_.rules[std::min(node_first, f)].slot;
      if (next != slot && n > 0) reject_(slot, n), n = 0;
      slot = next;
      n += per_b * count;
    }
    reject_(slot, n);
  }
  // The ZeRO settings under one etp share its row: their credits are summed per first failing
  // rule and spread over the row's groups once, after the ZeRO loop (credit_zero).
  void defer_credit(std::size_t f, std::int64_t per_b) {
    if (w_.zero_credit[f] == 0) w_.zero_credited.push_back(f);
    w_.zero_credit[f] += per_b;
  }
  // A decided ZeRO setting (first failing rule f): credited at once when it is the first for
  // every size, else deferred to the etp level's row.
  void credit_zero_setting(std::size_t f, std::int64_t per_b) {
    if (f <= row_min_[static_cast<std::size_t>(etp_level)]) {
      reject_(plan_.rules[f].slot, per_b * static_cast<std::int64_t>(nb_count_));
    } else {
      defer_credit(f, per_b);
    }
  }
  // The ZeRO level takes the etp level's row (it adds none when its rules are known per setting).
  void zero_takes_etp_row(std::size_t f) {
    const auto Z = static_cast<std::size_t>(zero_level), E = static_cast<std::size_t>(etp_level);
    first_[Z] = f;
    row_[Z] = row_[E];
    row_min_[Z] = row_min_[E];
    row_groups_[Z] = row_groups_[E];
  }
  std::size_t& rest_first(std::size_t epi, std::size_t etpi, std::size_t zi) {
    return w_.rest_first[(epi * d_.etps.size() + etpi) * d_.zeros.size() + zi];
  }
  Keyed* keyed_entry(int level) {
    const auto L = static_cast<std::size_t>(level);
    if (w_.n_keyed[L] == 0) return nullptr;
    const std::size_t key = level == pass_level ? pass_index
                            : level == ep_level ? ep_index
                                                : ep_index * d_.etps.size() + etp_index;
    return &w_.keyed[L][key];
  }
  ZeroSummary& zero_summary();
  const ZeroOutcome& zero_outcome(ZeroSummary& summary, std::size_t above);

  const SearchSpace& space_;
  const RulePlan& plan_;
  const TripleDomains& d_;
  space_detail::RuleWalkState& w_;
  const bool prune_;
  Strategy& s_;
  Reject& reject_;
  const std::size_t nb_count_;
  const bool cache_rest_;
  // The ZeRO level reads no b: its decided settings are credited against the etp level's row.
  const bool defer_zero_credit_;
  // The ZeRO level's outcomes read from tables (zero_settings, enter_zero) rather than by enter.
  const bool fast_zero_;
  // Per level: the first failing rule index (into plan.rules) on the path so far among the rules
  // that do not read b, and the row of first b-rule failures (one per micro-batch size) in force
  // there — its own when b-rules are evaluated at the level, else its parent's, shared by pointer
  // — with its minimum and its run-length groups (value, sizes), so that crediting a decided
  // subtree costs a few groups rather than a pass over every size.
  std::array<std::size_t, kLevels> first_{};
  std::array<const std::size_t*, kLevels> row_{};
  std::array<std::size_t, kLevels> row_min_{};
  std::array<const Groups*, kLevels> row_groups_{};
  std::size_t zero_index_ = 0;
  const ZeroSummary* summary_ = nullptr;  // the (ep, etp) node's, when its ZeRO settings were summarized
};

template <class Reject>
bool RuleWalk<Reject>::enter(int level, std::int64_t per_b) {
  const auto L = static_cast<std::size_t>(level);
  const std::size_t parent = level == 0 ? RulePlan::kNone : first_[L - 1];
  Keyed* const k = keyed_entry(level);
  if (k) {
    if (k->first == kUnknown) {
      k->first = first_failing(space_, plan_, level, false, s_, RulePlan::kNone);
      if (!plan_.at[2 * L + 1].empty()) {
        k->own_b.resize(nb_count_);
        for (std::size_t bi = 0; bi < nb_count_; ++bi) {
          set_b(bi);
          const std::size_t f = first_failing(space_, plan_, level, true, s_, RulePlan::kNone);
          k->own_b[bi] = f;
          extend_row(k->own_groups, k->own_min, f);
        }
      }
    }
    first_[L] = std::min(parent, k->first);
  } else if (level == zero_level) {  // the part that reads only the triple and (z, G) is known already
    const std::size_t known = std::min(parent, w_.zero_first[zero_index_]);
    if (cache_rest_) {
      std::size_t& rest = rest_first(ep_index, etp_index, zero_index_);
      if (rest == kUnknown) rest = first_failing_in(space_, plan_, plan_.zero_rest, s_, RulePlan::kNone);
      first_[L] = std::min(known, rest);
    } else {
      first_[L] = std::min(known, first_failing_in(space_, plan_, plan_.zero_rest, s_, known));
    }
  } else {
    first_[L] = std::min(parent, first_failing(space_, plan_, level, false, s_, parent));
  }
  const std::size_t* parent_row = level == 0 ? nullptr : row_[L - 1];
  if (k && !k->own_b.empty() && k->own_min == RulePlan::kNone) {  // nothing fails here
    row_[L] = parent_row;
    row_min_[L] = row_min_[L - 1];
    row_groups_[L] = row_groups_[L - 1];
  } else if (k && !k->own_b.empty() && row_min_[L - 1] == RulePlan::kNone) {  // nothing failed above
    row_[L] = k->own_b.data();
    row_min_[L] = k->own_min;
    row_groups_[L] = &k->own_groups;
  } else if (k && !k->own_b.empty()) {
    // The key's row under the parent's: kept with the key when the parent's is the triple's.
    const bool keep = parent_row == row_[triple_level];
    if (!keep || !k->has_merged) {
      std::vector<std::size_t>& own = keep ? k->merged : w_.own_rows[L];
      Groups& g = keep ? k->merged_groups : w_.groups[L];
      own.resize(nb_count_);
      g.clear();
      std::size_t min_b = RulePlan::kNone;
      for (std::size_t bi = 0; bi < nb_count_; ++bi) {
        const std::size_t f = std::min(parent_row[bi], k->own_b[bi]);
        own[bi] = f;
        extend_row(g, min_b, f);
      }
      if (keep) {
        k->merged_min = min_b;
        k->has_merged = true;
      } else {
        row_[L] = own.data();
        row_min_[L] = min_b;
        row_groups_[L] = &g;
      }
    }
    if (keep) {
      row_[L] = k->merged.data();
      row_min_[L] = k->merged_min;
      row_groups_[L] = &k->merged_groups;
    }
  } else if (plan_.at[2 * L + 1].empty()) {  // no b-rule here: the parent's row stands
    row_[L] = level == 0 ? w_.first_b.data() : parent_row;
    row_min_[L] = level == 0 ? RulePlan::kNone : row_min_[L - 1];
    row_groups_[L] = level == 0 ? &w_.no_failure : row_groups_[L - 1];
  } else {
    std::size_t* own = &w_.first_b[L * nb_count_];
    std::size_t min_b = RulePlan::kNone;
    Groups& g = w_.groups[L];
    g.clear();
    for (std::size_t bi = 0; bi < nb_count_; ++bi) {
      const std::size_t parent_b = level == 0 ? RulePlan::kNone : parent_row[bi];
      const std::size_t bound = std::min(parent_b, first_[L]);
      std::size_t f = parent_b;
      if (plan_.at[2 * L + 1].front() < bound) {
        set_b(bi);
        f = std::min(parent_b, first_failing(space_, plan_, level, true, s_, bound));
      }
      own[bi] = f;
      extend_row(g, min_b, f);
    }
    row_[L] = own;
    row_min_[L] = min_b;
    row_groups_[L] = &g;
  }
  // Decided when a rule fails for the whole subtree and every earlier rule has been evaluated.
  if (!prune_ || per_b == 0 || first_[L] >= plan_.deeper[L]) return false;
  if (first_[L] <= row_min_[L]) {  // the same rule for every b: credited at once
    reject_(plan_.rules[first_[L]].slot, per_b * static_cast<std::int64_t>(nb_count_));
    return true;
  }
  if (level == zero_level && defer_zero_credit_) {
    defer_credit(first_[L], per_b);
    return true;
  }
  credit_groups(*row_groups_[L], first_[L], per_b);
  return true;
}

// Per (ep, etp) of this triple: each ZeRO setting's first failing rule at the ZeRO level (min of
// its zero_fixed and zero_rest outcomes). Made when first needed.
template <class Reject>
typename RuleWalk<Reject>::ZeroSummary& RuleWalk<Reject>::zero_summary() {
  ZeroSummary& summary = w_.zero_summaries[ep_index * d_.etps.size() + etp_index];
  if (summary.made) return summary;
  summary.made = true;
  Strategy t = s_;
  for (std::size_t zi = 0; zi < d_.zeros.size(); ++zi) {
    t.zero = d_.zeros[zi].zero;
    t.shard_group = d_.zeros[zi].shard_group;
    t.offload = d_.zeros[zi].offload;
    std::size_t& rest = rest_first(ep_index, etp_index, zi);
    if (rest == kUnknown) rest = first_failing_in(space_, plan_, plan_.zero_rest, t, RulePlan::kNone);
    summary.first.push_back(std::min(w_.zero_first[zi], rest));
  }
  return summary;
}

// Per first failing rule above the ZeRO level (`above`, kNone when nothing failed), the settings
// decided there counted per rule and the others, in order, to walk.
template <class Reject>
const typename RuleWalk<Reject>::ZeroOutcome& RuleWalk<Reject>::zero_outcome(ZeroSummary& summary, std::size_t above) {
  for (std::size_t i = 0; i < summary.n_outcomes; ++i) {
    if (summary.outcomes[i].above == above) return summary.outcomes[i];
  }
  ZeroOutcome& o = space_detail::RuleWalkState::add_outcome(summary);
  o.above = above;
  for (std::size_t zi = 0; zi < d_.zeros.size(); ++zi) {
    const std::size_t f = std::min(above, summary.first[zi]);
    if (f < plan_.deeper[static_cast<std::size_t>(zero_level)]) {
      auto it = std::find_if(o.decided.begin(), o.decided.end(), [&](const auto& entry) { return entry.first == f; });
      if (it == o.decided.end()) {
        o.decided.emplace_back(f, 1);
      } else {
        ++it->second;
      }
    } else {
      o.walk.push_back(zi);
    }
  }
  return o;
}

template <class Reject>
const std::vector<std::size_t>& RuleWalk<Reject>::zero_settings(std::int64_t per_b) {
  summary_ = nullptr;
  if (!fast_zero_ || per_b == 0) return w_.all_zero_indices;
  ZeroSummary& made = zero_summary();
  const ZeroOutcome& outcome = zero_outcome(made, first_[static_cast<std::size_t>(etp_level)]);
  for (const auto& [f, count] : outcome.decided) credit_zero_setting(f, per_b * count);
  summary_ = &made;
  return outcome.walk;
}

template <class Reject>
bool RuleWalk<Reject>::enter_zero(std::size_t zero_index, std::int64_t per_b) {
  zero_index_ = zero_index;
  const std::size_t above = first_[static_cast<std::size_t>(etp_level)];
  if (summary_) {  // not decided at the level (zero_settings credited those)
    zero_takes_etp_row(std::min(above, summary_->first[zero_index]));
    return false;
  }
  if (!fast_zero_) return enter(zero_level, per_b);
  // enter(zero_level, …) when the level's rules are all known per (ep, etp, ZeRO setting) and it
  // adds no b-row: a few table reads per setting.
  std::size_t& rest = rest_first(ep_index, etp_index, zero_index);
  if (rest == kUnknown) rest = first_failing_in(space_, plan_, plan_.zero_rest, s_, RulePlan::kNone);
  const std::size_t f = std::min({above, w_.zero_first[zero_index], rest});
  zero_takes_etp_row(f);
  if (per_b == 0 || f >= plan_.deeper[static_cast<std::size_t>(zero_level)]) return false;
  credit_zero_setting(f, per_b);
  return true;
}

// Credits the ZeRO settings' deferred rejections against the etp level's row (the ZeRO level adds
// no row of its own when defer_zero_credit_): the same counts per rule as crediting each.
template <class Reject>
void RuleWalk<Reject>::credit_zero() {
  for (const std::size_t f : w_.zero_credited) {
    credit_groups(*row_groups_[static_cast<std::size_t>(etp_level)], f, w_.zero_credit[f]);
    w_.zero_credit[f] = 0;
  }
  w_.zero_credited.clear();
}

template <class Reject>
const std::vector<std::size_t>& RuleWalk<Reject>::sizes_to_visit(std::int64_t per_b) {
  std::vector<std::size_t>& walk = w_.walk_b;
  walk.clear();
  for (std::size_t bi = 0; bi < nb_count_; ++bi) {
    const std::size_t f = leaf_rule(bi);
    if (f != RulePlan::kNone && prune_) {
      reject_(plan_.rules[f].slot, per_b);
    } else {
      walk.push_back(bi);
    }
  }
  return walk;
}

}  // namespace meshfit
