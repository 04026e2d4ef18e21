#include "search/strategy_explain.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "search/evaluator/memory_evaluator.hpp"
#include "search/evaluator/step_time_evaluator.hpp"
#include "search/strategy_key.hpp"

namespace meshfit {

namespace {

// §6.5 step 4's canonicalisation after one dimension changed.
bool canonicalise(Strategy& x, const SearchSpace& space, bool vpp_changed) {
  const Model& m = *space.model;
  const std::int64_t N = space.cluster->devices;
  if (N % (x.tp * x.cp * x.pp) != 0) return false;
  x.dp = N / (x.tp * x.cp * x.pp);
  if (space.run->global_batch % (x.dp * x.micro_batch) != 0) return false;
  x.num_microbatches = space.run->global_batch / (x.dp * x.micro_batch);
  if (x.pp == 1) {
    x.vpp = 1;
    x.schedule = Schedule::none;
  } else if (x.schedule == Schedule::none || vpp_changed) {
    if (x.schedule == Schedule::none || x.schedule == Schedule::one_f_one_b ||
        x.schedule == Schedule::interleaved_1f1b) {
      x.schedule = x.vpp >= 2 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
    }
  }
  if (x.cp == 1) {
    x.cp_algo = CpAlgo::none;
    x.cp_u = 1;
  } else {
    if (x.cp_algo == CpAlgo::none) x.cp_algo = CpAlgo::ring;
    x.cp_u = x.cp_algo == CpAlgo::ulysses  ? x.cp
             : x.cp_algo == CpAlgo::hybrid ? hybrid_ulysses_degree(m, x, space.cluster->device.placement_domain(),
                                                                   space.policies.enabled(Policy::ulysses_kv_divisible))
                                           : 1;
  }
  if (x.zero == 0) {
    x.shard_group = 1;
  } else if (x.shard_group < 2 || (x.dp * x.cp) % x.shard_group != 0) {
    x.shard_group = x.dp * x.cp;
  }
  if (space.policies.enabled(Policy::sp_with_tp)) x.sp = x.tp > 1;
  if (x.tp == 1) x.sp = false;
  if (!x.sp) x.tp_comm_overlap = false;  // H25: it decomposes SP's collectives
  if (x.recompute != Recompute::full) x.recompute_layers = 0;
  return true;
}

// A single-dimension change of a strategy (§6.5 step 4), before canonicalisation.
struct Neighbour {
  std::string change;  // "tp 4→8"
  Strategy strategy;
  bool vpp_changed = false;
};

// Every single-dimension change of `s` in key order (not dp, m or sp).
std::vector<Neighbour> neighbours(const SearchSpace& space, const Strategy& s) {
  const Model& m = *space.model;
  std::vector<Neighbour> out;
  // Each value of `values` but s's own, for the field `field`.
  auto vary = [&](const char* dim, auto Strategy::*field, const auto& values, bool vpp_changed = false) {
    using std::to_string;
    for (const auto& v : values) {
      if (v == s.*field) continue;
      Strategy x = s;
      x.*field = v;
      out.push_back({std::string(dim) + " " + to_string(s.*field) + "→" + to_string(v), x, vpp_changed});
    }
  };
  const std::vector<std::int64_t> dN = divisors(space.cluster->devices);
  vary("tp", &Strategy::tp, dN);
  vary("cp", &Strategy::cp, dN);
  if (s.cp > 1) vary("cp_algo", &Strategy::cp_algo, std::vector<CpAlgo>{CpAlgo::ring, CpAlgo::ulysses, CpAlgo::hybrid});
  vary("pp", &Strategy::pp, dN);
  if (s.pp > 1) {
    std::vector<std::int64_t> vpps;
    for (std::int64_t v = 1; v <= m.layers && s.pp * v <= m.layers + 2; ++v) vpps.push_back(v);
    vary("vpp", &Strategy::vpp, vpps, true);
  }
  if (m.is_moe()) {
    for (std::int64_t v : divisors(s.stage_ranks())) {  // ep and etp in turn per value
      vary("ep", &Strategy::ep, std::vector<std::int64_t>{v});
      vary("etp", &Strategy::etp, std::vector<std::int64_t>{v});
    }
  }
  vary("zero", &Strategy::zero, std::vector<int>{0, 1, 2, 3});
  if (s.zero >= 1) {
    std::vector<std::int64_t> groups;
    for (std::int64_t j : divisors(s.dp)) {
      if (s.cp * j >= 2) groups.push_back(s.cp * j);
    }
    vary("shard_group", &Strategy::shard_group, groups);
  }
  // Offload where the device states its host side (rule H24): what would fit only that way.
  if (space.cluster->device.has_host()) {
    vary("offload", &Strategy::offload, std::vector<Offload>{Offload::none, Offload::optimizer, Offload::params});
  }
  // TP communication overlap where TP runs with SP (rule H25): faster, at the cost of its buffers.
  if (s.tp > 1 && s.sp) {
    Strategy x = s;
    x.tp_comm_overlap = !s.tp_comm_overlap;
    out.push_back({std::string("tp_comm_overlap ") + (s.tp_comm_overlap ? "true→false" : "false→true"), x, false});
  }
  vary("recompute", &Strategy::recompute,
       std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full});
  vary("mbs", &Strategy::micro_batch, divisors(space.run->global_batch));
  return out;
}

// The changes to report: the fastest that fit (at most max_changes), else the five nearest to fitting.
void pick_changes(Explanation& e, std::vector<ExplainChange> all, std::size_t max_changes) {
  std::vector<ExplainChange> fitting;
  for (const auto& ch : all) {
    if (ch.fits) fitting.push_back(ch);
  }
  if (!fitting.empty()) {
    std::sort(fitting.begin(), fitting.end(), [](const ExplainChange& a, const ExplainChange& b) {
      const auto ta = std::llround(a.step * 1e9), tb = std::llround(b.step * 1e9);
      if (ta != tb) return ta < tb;
      if (a.peak != b.peak) return a.peak < b.peak;
      return key_less(a.strategy, b.strategy);
    });
    if (fitting.size() > max_changes) fitting.resize(max_changes);
    e.changes = fitting;
    e.changes_fit = true;
  } else {
    std::sort(all.begin(), all.end(), [](const ExplainChange& a, const ExplainChange& b) {
      if (a.excess != b.excess) return a.excess < b.excess;
      return key_less(a.strategy, b.strategy);
    });
    if (all.size() > 5) all.resize(5);
    e.changes = all;
  }
}

}  // namespace

Explanation explain_strategy(const SearchSpace& space, const Strategy& s, double headroom, std::size_t max_changes) {
  const Model& m = *space.model;
  const Run& run = *space.run;
  const Cluster& c = *space.cluster;
  Explanation e;
  e.broken = broken_rules(m, run, c, s);
  if (!e.broken.empty()) return e;
  for (std::size_t i = 0; i < kPolicyCount; ++i) {
    const Policy p = static_cast<Policy>(i);
    if (space.policies.enabled(p) && !policy_holds(p, m, run, c, s)) e.policies.push_back(p);
  }
  e.memory = estimate_memory(m, run, c, s, headroom);
  e.time = estimate_step_time(m, run, c, s);

  // Step 4: each single-dimension change, kept when valid after canonicalisation.
  std::vector<ExplainChange> all;
  for (Neighbour& n : neighbours(space, s)) {
    Strategy& x = n.strategy;
    if (!canonicalise(x, space, n.vpp_changed)) continue;
    if (!key_less(x, s) && !key_less(s, x)) continue;
    if (space.first_failure(x)) continue;
    const MemoryReport mem = estimate_memory(m, run, c, x, headroom);
    ExplainChange ch;
    ch.change = n.change;
    ch.strategy = x;
    ch.peak = mem.peak;
    ch.peak_stage = mem.peak_stage;
    ch.fits = mem.fits;
    ch.excess = mem.peak * run.options.fit_factor_for(x.recompute) - mem.budget;  // with --fit-margin, its factor
    ch.step = estimate_step_time(m, run, c, x).step;
    all.push_back(ch);
  }
  pick_changes(e, std::move(all), max_changes);
  return e;
}

}  // namespace meshfit
