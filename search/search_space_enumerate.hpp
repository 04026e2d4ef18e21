// The enumeration of one (tp, cp, pp) triple: the loop nest over its subtree (sp with tp_comm_overlap, CP algorithm,
// pass — vpp and schedule —, ep, etp, ZeRO setting, recompute mode, micro-batch size), in the
// order of search-and-time.md §2.6. A template, so that the visitor is inlined in the hot loop.
// The values each loop takes come from TripleDomains (triple_domains.hpp); the rule outcomes and
// the subtrees decided without a visit, from RuleWalk (rule_walk.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <map>
#include <type_traits>
#include <utility>

#include "search/rule_walk.hpp"
#include "search/triple_domains.hpp"

namespace meshfit {

namespace space_detail {
template <class T>
bool allowed(const std::vector<T>& pins, const T& v) {
  return pins.empty() || std::find(pins.begin(), pins.end(), v) != pins.end();
}
template <class T>
std::int64_t count_allowed(const std::vector<T>& pins, const std::vector<T>& domain) {
  return static_cast<std::int64_t>(
      std::count_if(domain.begin(), domain.end(), [&](const T& v) { return allowed(pins, v); }));
}
}  // namespace space_detail

// What the walk of a triple works in, kept by its caller from triple to triple (and search to
// search) so that a walk allocates nothing once warm: the search keeps one per thread.
struct TripleWalkStorage {
  TripleDomains domains;
  space_detail::RuleWalkState walk;
  // The rule plans met, by what make_rule_plan reads (the pinned dimensions, the policies on,
  // whether the model has experts, etp_domain_ok): a handful per process.
  std::map<std::array<std::uint32_t, 4>, RulePlan> plans;

  const RulePlan& plan(const SearchSpace& space, bool etp_domain_ok) {
    std::uint32_t on = 0;
    for (std::size_t i = 0; i < kPolicyCount; ++i) on |= space.policies.enabled(static_cast<Policy>(i)) ? 1u << i : 0u;
    const std::array<std::uint32_t, 4> key{space.pins.given(), on, space.model->is_moe() ? 1u : 0u,
                                           etp_domain_ok ? 1u : 0u};
    auto it = plans.find(key);
    if (it == plans.end()) it = plans.emplace(key, make_rule_plan(space, etp_domain_ok)).first;
    return it->second;
  }
};

template <class Visit, class Reject>
void SearchSpace::for_each(const std::array<std::int64_t, 3>& triple, Visit&& visit, Reject&& reject) const {
  TripleWalkStorage storage;
  for_each(triple, storage, std::forward<Visit>(visit), std::forward<Reject>(reject));
}

template <class Visit, class Reject>
void SearchSpace::for_each(const std::array<std::int64_t, 3>& triple, TripleWalkStorage& storage, Visit&& visit,
                           Reject&& reject) const {
  using space_detail::allowed;
  TripleDomains& d = storage.domains;
  d.fill(*this, triple);
  const RulePlan& plan = storage.plan(*this, d.etp_domain_ok);

  Strategy s;
  s.tp = d.tp;
  s.cp = d.cp;
  s.pp = d.pp;
  s.dp = d.dp;
  s.ep = s.etp = 1;  // a dense model's throughout; H5's tp clause is read with etp = 1
  RuleWalk<std::remove_reference_t<Reject>> walk(*this, plan, d, storage.walk, prune_subtrees, s, reject);
  // Candidates per micro-batch size under each level's node (those a decided subtree credits).
  const std::int64_t below_zero = d.modes;
  const std::int64_t below_etp = d.n_zero * below_zero;
  const std::int64_t below_ep = d.n_etp * below_etp;
  const std::int64_t below_sp = d.n_algo * d.all_passes * d.below_pass;
  if (walk.enter(triple_level, d.n_sp * below_sp)) return;
  for (const TripleDomains::SpSetting& sp : d.sps) {
    if (!allowed(pins.sp, sp.sp)) continue;
    s.sp = sp.sp;
    s.tp_comm_overlap = sp.tp_comm_overlap;
    if (walk.enter(sp_level, below_sp)) continue;
    for (CpAlgo algo : d.algos) {
      if (!allowed(pins.cp_algo, algo)) continue;
      s.cp_algo = algo;
      s.cp_u = algo == CpAlgo::ulysses  ? d.cp
               : algo == CpAlgo::hybrid ? hybrid_ulysses_degree(*model, s, cluster->device.placement_domain(),
                                                                policies.enabled(Policy::ulysses_kv_divisible))
                                        : 1;
      if (walk.enter(algo_level, d.all_passes * d.below_pass)) continue;
      for (std::int64_t pass = 1; pass <= d.passes; ++pass) {
        const std::int64_t weight = d.pass_weight[static_cast<std::size_t>(pass)];
        if (weight == 0) continue;
        walk.pass_index = static_cast<std::size_t>(pass);
        s.vpp = d.pass_vpp(pass);
        s.schedule = d.pass_schedule(pass);
        if (walk.enter(pass_level, weight * d.below_pass)) continue;
        for (std::size_t ep_index = 0; ep_index < d.eps.size(); ++ep_index) {
          if (!allowed(pins.ep, d.eps[ep_index])) continue;
          s.ep = d.eps[ep_index];
          walk.ep_index = ep_index;
          if (walk.enter(ep_level, weight * below_ep)) continue;
          for (std::size_t etp_index = 0; etp_index < d.etps.size(); ++etp_index) {
            if (!allowed(pins.etp, d.etps[etp_index])) continue;
            s.etp = d.etps[etp_index];
            walk.etp_index = etp_index;
            if (walk.enter(etp_level, weight * below_etp)) continue;
            for (const std::size_t zero_index : walk.zero_settings(weight * below_zero)) {
              s.zero = d.zeros[zero_index].zero;
              s.shard_group = d.zeros[zero_index].shard_group;
              s.offload = d.zeros[zero_index].offload;
              if (walk.enter_zero(zero_index, weight * below_zero)) continue;
              // No rule reads the recompute mode: a micro-batch size known invalid here is so in
              // every mode, credited once for all of them and not visited.
              const std::vector<std::size_t>& sizes = walk.sizes_to_visit(weight * below_zero);
              if (sizes.empty()) continue;
              std::size_t mode_index = 0;
              for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
                if (!allowed(pins.recompute, rc)) continue;
                s.recompute = rc;
                const std::size_t n_rc_count = rc == Recompute::full ? d.recompute_layers.size() : 1;
                for (std::size_t ri = 0; ri < n_rc_count; ++ri) {
                  s.recompute_layers = rc == Recompute::full ? d.recompute_layers[ri] : 0;
                  // b rises innermost: `first` marks the start of a run over b with all else fixed.
                  bool first_in_run = true;
                  for (std::size_t bi : sizes) {
                    const std::size_t f = walk.leaf_rule(bi);
                    s.micro_batch = d.bs[bi];
                    s.num_microbatches = d.ms[bi];
                    visit(s, Position{first_in_run, bi, mode_index, weight,
                                      f == RulePlan::kNone ? Position::kValid : plan.rules[f].slot});
                    first_in_run = false;
                  }
                  ++mode_index;
                }
              }
            }
            walk.credit_zero();
          }
        }
      }
    }
  }
}

}  // namespace meshfit
