// The enumeration loop of SearchSpace (a template: the visitor is inlined in the hot loop).
#pragma once

#include <algorithm>

#include "search/rule_walk_state.hpp"
#include "search/triple_domains.hpp"

namespace meshfit {

namespace space_detail {
template <class T>
bool allowed(const std::vector<T>& pins, const T& v) {
  return pins.empty() || std::find(pins.begin(), pins.end(), v) != pins.end();
}
template <class T>
std::int64_t count_allowed(const std::vector<T>& pins, const std::vector<T>& domain) {
  return static_cast<std::int64_t>(std::count_if(domain.begin(), domain.end(), [&](const T& v) { return allowed(pins, v); }));
}
}  // namespace space_detail

template <class Visit, class Reject>
void SearchSpace::for_each(const std::array<std::int64_t, 3>& triple, Visit&& visit, Reject&& reject) const {
  using space_detail::allowed;
  using space_detail::count_allowed;
  const Model& m = *model;
  using space_detail::Groups;
  using space_detail::kUnknown;
  using space_detail::Keyed;
  using space_detail::RuleWalkState;
  using space_detail::ZeroOutcome;
  using space_detail::ZeroSummary;
  // The domains under this triple and the rule walk's state, in storage this thread keeps from
  // triple to triple (a walk started within another's visit on the same thread, should one ever
  // be, gets its own).
  struct Storage {
    TripleDomains domains;
    RuleWalkState walk;
  };
  thread_local Storage kept;
  thread_local bool kept_in_use = false;
  Storage nested;
  Storage& storage = kept_in_use ? nested : kept;
  struct InUse {
    bool& flag;
    const bool was;
    ~InUse() { flag = was; }
  } in_use{kept_in_use, kept_in_use};
  kept_in_use = true;
  TripleDomains& d = storage.domains;
  RuleWalkState& w = storage.walk;
  d.fill(*this, triple);
  const std::int64_t tp = d.tp, cp = d.cp, pp = d.pp, dp = d.dp;
  const std::vector<std::int64_t>& bs = d.bs;
  const std::vector<std::int64_t>& ms = d.ms;
  const std::vector<std::int64_t>& eps = d.eps;
  const std::vector<std::int64_t>& etps = d.etps;
  const auto& zeros = d.zeros;
  const std::int64_t modes = d.modes, passes = d.passes, all_passes = d.all_passes;
  const std::int64_t n_zero = d.n_zero, n_etp = d.n_etp, n_sp = d.n_sp, below_pass = d.below_pass;
  const RulePlan& plan = rule_plan_for(*this, d.etp_domain_ok);

  Strategy s;
  s.tp = tp;
  s.cp = cp;
  s.pp = pp;
  s.dp = dp;
  // First failing rule index (into plan.rules) on the path so far, per level: one for the rules
  // that do not read b, one per micro-batch size for those that do.
  const std::size_t nb_count = bs.size();
  std::array<std::size_t, kLevels> first{};
  std::vector<std::size_t>& first_b = w.first_b;
  first_b.assign(static_cast<std::size_t>(kLevels) * nb_count, RulePlan::kNone);
  auto& own_rows = w.own_rows;  // a keyed level's row, when not kept
  auto set_b = [&](std::size_t bi) {
    s.micro_batch = bs[bi];
    s.num_microbatches = ms[bi];
  };
  // Evaluates the rules of `level` at this node; true when the subtree (`per_b` candidates per
  // micro-batch size) is decided and has been credited to its rules instead of being walked.
  // The ZeRO level's rules that read only the triple and (z, G), per ZeRO setting: once here
  // rather than under every (sp, algorithm, pass, ep, etp) (rule_plan.hpp, zero_fixed).
  std::vector<std::size_t>& zero_first = w.zero_first;
  zero_first.assign(zeros.size(), RulePlan::kNone);
  for (std::size_t i = 0; i < zeros.size(); ++i) {
    Strategy t = s;
    t.zero = zeros[i].first;
    t.shard_group = zeros[i].second;
    zero_first[i] = first_failing_in(*this, plan, plan.zero_fixed, t, RulePlan::kNone);
  }
  std::size_t zero_index = 0;
  // The zero_rest outcome per (ep, etp, ZeRO setting) when it reads nothing else (rule_plan.hpp),
  // found at the first (sp, algorithm, pass) that reaches it: kUnknown until then. The first
  // failing rule of a list without a bound, cut at the caller's bound, is the one with it.
  const bool cache_rest = plan.zero_rest_reads_experts_only;
  std::vector<std::size_t>& rest_first = w.rest_first;
  rest_first.assign(cache_rest ? eps.size() * etps.size() * zeros.size() : 0, kUnknown);
  std::size_t ep_index = 0, etp_index = 0;
  // Per level, the row of first b-rule failures (one per micro-batch size) in force there: its
  // own when b-rules are evaluated at the level, else its parent's, shared by pointer; with its
  // minimum and its run-length groups (value, sizes), so that crediting a decided subtree costs
  // a few groups rather than a pass over every size.
  std::array<const std::size_t*, kLevels> row{};
  std::array<std::size_t, kLevels> row_min{};
  auto& groups = w.groups;
  std::array<const Groups*, kLevels> row_groups{};
  Groups& no_failure = w.no_failure;
  no_failure.assign(1, {RulePlan::kNone, static_cast<std::int64_t>(nb_count)});
  // A decided subtree whose sizes fail different rules: each run of sizes credited to the first
  // failing rule of (this node, that size), consecutive runs of one rule together.
  auto credit_groups = [&](const Groups& row_groups_here, std::size_t node_first,
                           std::int64_t per_b) {
    std::size_t slot = SIZE_MAX;
    std::int64_t n = 0;
    for (const auto& [f, count] : row_groups_here) {
      const std::size_t next = plan.rules[std::min(node_first, f)].slot;
      if (next != slot && n > 0) reject(slot, n), n = 0;
      slot = next;
      n += per_b * count;
    }
    reject(slot, n);
  };
  const bool defer_zero_credit = plan.at[2 * static_cast<std::size_t>(zero_level) + 1].empty();
  // Per first failing rule (index into plan.rules), the per-b count credited to it, and the
  // rules touched since the last credit_zero.
  std::vector<std::int64_t>& zero_credit = w.zero_credit;
  zero_credit.assign(plan.rules.size(), 0);
  std::vector<std::size_t>& zero_credited = w.zero_credited;
  zero_credited.clear();
  // The ZeRO settings under one etp share its row: their credits are summed per first failing
  // rule and spread over the row's groups once, after the ZeRO loop (credit_zero).
  // Kept inline (GCC otherwise outlines it as the loop grows: a call per ZeRO setting decided).
  auto defer_credit = [&](std::size_t f, std::int64_t per_b) __attribute__((always_inline)) {
    if (zero_credit[f] == 0) zero_credited.push_back(f);
    zero_credit[f] += per_b;
  };
  // A size's first failing rule appended to a row's minimum and run-length groups.
  auto extend_row = [](Groups& g, std::size_t& min_b, std::size_t f) {
    min_b = std::min(min_b, f);
    if (!g.empty() && g.back().first == f) {
      ++g.back().second;
    } else {
      g.emplace_back(f, 1);
    }
  };
  // The keyed levels' outcomes (rule_plan.hpp, keyed, and Keyed): with the parent's bound applied
  // by min, they are what the level would find under any values of the loops between.
  w.use_keyed(pass_level, plan.keyed[pass_level] ? static_cast<std::size_t>(passes + 1) : 0);
  w.use_keyed(ep_level, plan.keyed[ep_level] ? eps.size() : 0);
  w.use_keyed(etp_level, plan.keyed[etp_level] ? eps.size() * etps.size() : 0);
  std::size_t pass_index = 0;
  auto keyed_entry = [&](int level) -> Keyed* {
    const auto L = static_cast<std::size_t>(level);
    if (w.n_keyed[L] == 0) return nullptr;
    const std::size_t key = level == pass_level ? pass_index : level == ep_level ? ep_index : ep_index * etps.size() + etp_index;
    return &w.keyed[L][key];
  };
  auto enter = [&](int level, std::int64_t per_b) {
    const auto L = static_cast<std::size_t>(level);
    const std::size_t parent = level == 0 ? RulePlan::kNone : first[L - 1];
    Keyed* const k = keyed_entry(level);
    if (k) {
      if (k->first == kUnknown) {
        k->first = first_failing(*this, plan, level, false, s, RulePlan::kNone);
        if (!plan.at[2 * L + 1].empty()) {
          k->own_b.resize(nb_count);
          for (std::size_t bi = 0; bi < nb_count; ++bi) {
            set_b(bi);
            const std::size_t f = first_failing(*this, plan, level, true, s, RulePlan::kNone);
            k->own_b[bi] = f;
            extend_row(k->own_groups, k->own_min, f);
          }
        }
      }
      first[L] = std::min(parent, k->first);
    } else if (level == zero_level) {  // the part that reads only the triple and (z, G) is known already
      const std::size_t known = std::min(parent, zero_first[zero_index]);
      if (cache_rest) {
        std::size_t& rest = rest_first[(ep_index * etps.size() + etp_index) * zeros.size() + zero_index];
        if (rest == kUnknown) rest = first_failing_in(*this, plan, plan.zero_rest, s, RulePlan::kNone);
        first[L] = std::min(known, rest);
      } else {
        first[L] = std::min(known, first_failing_in(*this, plan, plan.zero_rest, s, known));
      }
    } else {
      first[L] = std::min(parent, first_failing(*this, plan, level, false, s, parent));
    }
    const std::size_t* parent_row = level == 0 ? nullptr : row[L - 1];
    if (k && !k->own_b.empty() && k->own_min == RulePlan::kNone) {  // nothing fails here
      row[L] = parent_row;
      row_min[L] = row_min[L - 1];
      row_groups[L] = row_groups[L - 1];
    } else if (k && !k->own_b.empty() && row_min[L - 1] == RulePlan::kNone) {  // nothing failed above
      row[L] = k->own_b.data();
      row_min[L] = k->own_min;
      row_groups[L] = &k->own_groups;
    } else if (k && !k->own_b.empty()) {
      // The key's row under the parent's: kept with the key when the parent's is the triple's.
      const bool keep = parent_row == row[triple_level];
      if (!keep || !k->has_merged) {
        std::vector<std::size_t>& own = keep ? k->merged : own_rows[L];
        auto& g = keep ? k->merged_groups : groups[L];
        own.resize(nb_count);
        g.clear();
        std::size_t min_b = RulePlan::kNone;
        for (std::size_t bi = 0; bi < nb_count; ++bi) {
          const std::size_t f = std::min(parent_row[bi], k->own_b[bi]);
          own[bi] = f;
          extend_row(g, min_b, f);
        }
        if (keep) {
          k->merged_min = min_b;
          k->has_merged = true;
        } else {
          row[L] = own.data();
          row_min[L] = min_b;
          row_groups[L] = &g;
        }
      }
      if (keep) {
        row[L] = k->merged.data();
        row_min[L] = k->merged_min;
        row_groups[L] = &k->merged_groups;
      }
    } else if (plan.at[2 * L + 1].empty()) {  // no b-rule here: the parent's row stands
      row[L] = level == 0 ? first_b.data() : parent_row;
      row_min[L] = level == 0 ? RulePlan::kNone : row_min[L - 1];
      row_groups[L] = level == 0 ? &no_failure : row_groups[L - 1];
    } else {
      std::size_t* own = &first_b[L * nb_count];
      std::size_t min_b = RulePlan::kNone;
      auto& g = groups[L];
      g.clear();
      for (std::size_t bi = 0; bi < nb_count; ++bi) {
        const std::size_t parent_b = level == 0 ? RulePlan::kNone : parent_row[bi];
        const std::size_t bound = std::min(parent_b, first[L]);
        std::size_t f = parent_b;
        if (plan.at[2 * L + 1].front() < bound) {
          set_b(bi);
          f = std::min(parent_b, first_failing(*this, plan, level, true, s, bound));
        }
        own[bi] = f;
        extend_row(g, min_b, f);
      }
      row[L] = own;
      row_min[L] = min_b;
      row_groups[L] = &g;
    }
    // Decided when a rule fails for the whole subtree and every earlier rule has been evaluated.
    if (!prune_subtrees || per_b == 0 || first[L] >= plan.deeper[L]) return false;
    if (first[L] <= row_min[L]) {  // the same rule for every b: credited at once
      reject(plan.rules[first[L]].slot, per_b * static_cast<std::int64_t>(nb_count));
      return true;
    }
    if (level == zero_level && defer_zero_credit) {
      defer_credit(first[L], per_b);
      return true;
    }
    credit_groups(*row_groups[L], first[L], per_b);
    return true;
  };
  // Credits the ZeRO settings' deferred rejections against the etp level's row (the ZeRO level
  // adds no row of its own when defer_zero_credit): the same counts per rule as crediting each.
  auto credit_zero = [&]() {
    for (const std::size_t f : zero_credited) {
      credit_groups(*row_groups[static_cast<std::size_t>(etp_level)], f, zero_credit[f]);
      zero_credit[f] = 0;
    }
    zero_credited.clear();
  };

  // The ZeRO level inlined (below) when enter would only read tables there.
  const bool fast_zero = cache_rest && defer_zero_credit && prune_subtrees;
  std::vector<std::size_t>& all_zero_indices = w.all_zero_indices;
  all_zero_indices.resize(zeros.size());
  for (std::size_t i = 0; i < zeros.size(); ++i) all_zero_indices[i] = i;
  // Per (ep, etp) of this triple: each ZeRO setting's first failing rule at the ZeRO level (min of
  // its zero_fixed and zero_rest outcomes); and per first failing rule above the level (`above`,
  // kNone when nothing failed), the settings decided there counted per rule and the others, in
  // order, to walk. Made when first needed; an (ep, etp) node meets one or two values of `above`.
  w.use_summaries(fast_zero ? eps.size() * etps.size() : 0);
  std::vector<ZeroSummary>& zero_summaries = w.zero_summaries;
  auto zero_summary = [&](std::size_t epi, std::size_t etpi) -> ZeroSummary& {
    ZeroSummary& summary = zero_summaries[epi * etps.size() + etpi];
    if (summary.made) return summary;
    summary.made = true;
    Strategy t = s;
    for (std::size_t zi = 0; zi < zeros.size(); ++zi) {
      t.zero = zeros[zi].first;
      t.shard_group = zeros[zi].second;
      std::size_t& rest = rest_first[(epi * etps.size() + etpi) * zeros.size() + zi];
      if (rest == kUnknown) rest = first_failing_in(*this, plan, plan.zero_rest, t, RulePlan::kNone);
      summary.first.push_back(std::min(zero_first[zi], rest));
    }
    return summary;
  };
  auto zero_outcome = [&](ZeroSummary& summary, std::size_t above) -> const ZeroOutcome& {
    for (std::size_t i = 0; i < summary.n_outcomes; ++i) {
      if (summary.outcomes[i].above == above) return summary.outcomes[i];
    }
    ZeroOutcome& o = RuleWalkState::add_outcome(summary);
    o.above = above;
    for (std::size_t zi = 0; zi < zeros.size(); ++zi) {
      const std::size_t f = std::min(above, summary.first[zi]);
      if (f < plan.deeper[static_cast<std::size_t>(zero_level)]) {
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
  };
  s.ep = s.etp = 1;  // a dense model's throughout; H5's tp clause is read with etp = 1
  std::vector<std::size_t>& walk_b = w.walk_b;  // the micro-batch sizes to visit under a ZeRO setting
  const std::int64_t below_sp = d.n_algo * all_passes * below_pass;
  if (enter(triple_level, n_sp * below_sp)) return;
  for (bool sp : d.sps) {
    if (!allowed(pins.sp, sp)) continue;
    s.sp = sp;
    if (enter(sp_level, below_sp)) continue;
    for (CpAlgo algo : d.algos) {
      if (!allowed(pins.cp_algo, algo)) continue;
      s.cp_algo = algo;
      s.cp_u = algo == CpAlgo::ulysses ? cp
               : algo == CpAlgo::hybrid
                   ? hybrid_ulysses_degree(m, s, cluster->device.devices_per_node,
                                           policies.enabled(Policy::ulysses_kv_divisible))
                   : 1;
      if (enter(algo_level, all_passes * below_pass)) continue;
      for (std::int64_t pass = 1; pass <= passes; ++pass) {
        const std::int64_t weight = d.pass_weight[static_cast<std::size_t>(pass)];
        if (weight == 0) continue;
        pass_index = static_cast<std::size_t>(pass);
        s.vpp = d.pass_vpp(pass);
        s.schedule = d.pass_schedule(pass);
        if (enter(pass_level, weight * below_pass)) continue;
        for (ep_index = 0; ep_index < eps.size(); ++ep_index) {
          const std::int64_t ep = eps[ep_index];
          if (!allowed(pins.ep, ep)) continue;
          s.ep = ep;
          if (enter(ep_level, weight * n_etp * n_zero * modes)) continue;
          for (etp_index = 0; etp_index < etps.size(); ++etp_index) {
            const std::int64_t etp = etps[etp_index];
            if (!allowed(pins.etp, etp)) continue;
            s.etp = etp;
            if (enter(etp_level, weight * n_zero * modes)) continue;
            // Each ZeRO setting's first failing rule here reads only (ep, etp, z, G) and what
            // failed above: the settings decided at this level are credited per rule in bulk
            // (zero_summary, zero_outcome) and only the others are walked.
            const auto E = static_cast<std::size_t>(etp_level);
            const std::int64_t zero_per_b = weight * modes;
            const bool summarized = fast_zero && zero_per_b != 0;
            const std::vector<std::size_t>* zero_walk = &all_zero_indices;
            const ZeroSummary* summary = nullptr;
            if (summarized) {
              ZeroSummary& made = zero_summary(ep_index, etp_index);
              const ZeroOutcome& outcome = zero_outcome(made, first[E]);
              for (const auto& [f, count] : outcome.decided) {
                if (f <= row_min[E]) {
                  reject(plan.rules[f].slot, zero_per_b * count * static_cast<std::int64_t>(nb_count));
                } else {
                  defer_credit(f, zero_per_b * count);
                }
              }
              zero_walk = &outcome.walk;
              summary = &made;
            }
            for (const std::size_t walk_index : *zero_walk) {
              zero_index = walk_index;
              const auto& [z, G] = zeros[zero_index];
              s.zero = z;
              s.shard_group = G;
              if (summarized) {
                const auto Z = static_cast<std::size_t>(zero_level);
                first[Z] = std::min(first[E], summary->first[zero_index]);
                row[Z] = row[E];
                row_min[Z] = row_min[E];
                row_groups[Z] = row_groups[E];
              } else if (fast_zero) {
                // enter(zero_level, …) when the level's rules are all known per (ep, etp, ZeRO
                // setting) and it adds no b-row: a few table reads per setting, inline.
                const auto Z = static_cast<std::size_t>(zero_level);
                std::size_t& rest = rest_first[(ep_index * etps.size() + etp_index) * zeros.size() + zero_index];
                if (rest == kUnknown) rest = first_failing_in(*this, plan, plan.zero_rest, s, RulePlan::kNone);
                const std::size_t f = std::min({first[E], zero_first[zero_index], rest});
                first[Z] = f;
                row[Z] = row[E];
                row_min[Z] = row_min[E];
                row_groups[Z] = row_groups[E];
                const std::int64_t per_b = weight * modes;
                if (per_b != 0 && f < plan.deeper[Z]) {
                  if (f <= row_min[Z]) {
                    reject(plan.rules[f].slot, per_b * static_cast<std::int64_t>(nb_count));
                  } else {
                    defer_credit(f, per_b);
                  }
                  continue;
                }
              } else if (enter(zero_level, weight * modes)) {
                continue;
              }
              const std::size_t* fb = row[static_cast<std::size_t>(zero_level)];
              // No rule reads the recompute mode: a micro-batch size known invalid here is so in
              // every mode, credited once for all of them and not visited.
              walk_b.clear();
              for (std::size_t bi = 0; bi < nb_count; ++bi) {
                const std::size_t f = std::min(first[zero_level], fb[bi]);
                if (f != RulePlan::kNone && prune_subtrees) {
                  reject(plan.rules[f].slot, weight * modes);
                } else {
                  walk_b.push_back(bi);
                }
              }
              if (walk_b.empty()) continue;
              std::size_t mode_index = 0;
              for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
                if (!allowed(pins.recompute, rc)) continue;
                s.recompute = rc;
                s.recompute_layers = 0;
                // b rises innermost: `first` marks the start of a run over b with all else fixed.
                bool first_in_run = true;
                for (std::size_t bi : walk_b) {
                  const std::size_t f = std::min(first[zero_level], fb[bi]);
                  s.micro_batch = bs[bi];
                  s.num_microbatches = ms[bi];
                  visit(s, Position{first_in_run, bi, mode_index, weight, f == RulePlan::kNone ? Position::kValid : plan.rules[f].slot});
                  first_in_run = false;
                }
                ++mode_index;
              }
            }
            credit_zero();
          }
        }
      }
    }
  }
}

}  // namespace meshfit
