#include "search/strategy_explain.hpp"

#include <algorithm>
#include <cmath>

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
             : x.cp_algo == CpAlgo::hybrid ? hybrid_ulysses_degree(m, x, space.cluster->device.devices_per_node,
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
  if (x.recompute != Recompute::full) x.recompute_layers = 0;
  return true;
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

  // Step 4: every single-dimension change in key order (not dp, m or sp), kept when valid.
  const std::int64_t N = c.devices;
  const std::vector<std::int64_t> dN = divisors(N);
  std::vector<ExplainChange> all;
  auto consider = [&](const std::string& what, Strategy x, bool vpp_changed) {
    if (!canonicalise(x, space, vpp_changed)) return;
    if (!key_less(x, s) && !key_less(s, x)) return;
    if (space.first_failure(x)) return;
    const MemoryReport mem = estimate_memory(m, run, c, x, headroom);
    ExplainChange ch;
    ch.change = what;
    ch.strategy = x;
    ch.peak = mem.peak;
    ch.peak_stage = mem.peak_stage;
    ch.fits = mem.fits;
    ch.excess = mem.peak - mem.budget;
    ch.step = estimate_step_time(m, run, c, x).step;
    all.push_back(ch);
  };
  auto arrow = [](const std::string& dim, const std::string& from, const std::string& to) {
    return dim + " " + from + "→" + to;
  };
  using std::to_string;
  for (std::int64_t v : dN) {
    if (v == s.tp) continue;
    Strategy x = s;
    x.tp = v;
    consider(arrow("tp", to_string(s.tp), to_string(v)), x, false);
  }
  for (std::int64_t v : dN) {
    if (v == s.cp) continue;
    Strategy x = s;
    x.cp = v;
    consider(arrow("cp", to_string(s.cp), to_string(v)), x, false);
  }
  if (s.cp > 1) {
    for (CpAlgo a : {CpAlgo::ring, CpAlgo::ulysses, CpAlgo::hybrid}) {
      if (a == s.cp_algo) continue;
      Strategy x = s;
      x.cp_algo = a;
      consider(arrow("cp_algo", to_string(s.cp_algo), to_string(a)), x, false);
    }
  }
  for (std::int64_t v : dN) {
    if (v == s.pp) continue;
    Strategy x = s;
    x.pp = v;
    consider(arrow("pp", to_string(s.pp), to_string(v)), x, false);
  }
  if (s.pp > 1) {
    for (std::int64_t v = 1; v <= m.layers && s.pp * v <= m.layers + 2; ++v) {
      if (v == s.vpp) continue;
      Strategy x = s;
      x.vpp = v;
      consider(arrow("vpp", to_string(s.vpp), to_string(v)), x, true);
    }
  }
  if (m.is_moe()) {
    for (std::int64_t v : divisors(s.stage_ranks())) {
      if (v != s.ep) {
        Strategy x = s;
        x.ep = v;
        consider(arrow("ep", to_string(s.ep), to_string(v)), x, false);
      }
      if (v != s.etp) {
        Strategy x = s;
        x.etp = v;
        consider(arrow("etp", to_string(s.etp), to_string(v)), x, false);
      }
    }
  }
  for (int z = 0; z <= 3; ++z) {
    if (z == s.zero) continue;
    Strategy x = s;
    x.zero = z;
    consider(arrow("zero", to_string(s.zero), to_string(z)), x, false);
  }
  if (s.zero >= 1) {
    for (std::int64_t j : divisors(s.dp)) {
      const std::int64_t G = s.cp * j;
      if (G < 2 || G == s.shard_group) continue;
      Strategy x = s;
      x.shard_group = G;
      consider(arrow("shard_group", to_string(s.shard_group), to_string(G)), x, false);
    }
  }
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    if (r == s.recompute) continue;
    Strategy x = s;
    x.recompute = r;
    consider(arrow("recompute", to_string(s.recompute), to_string(r)), x, false);
  }
  for (std::int64_t b : divisors(run.global_batch)) {
    if (b == s.micro_batch) continue;
    Strategy x = s;
    x.micro_batch = b;
    consider(arrow("mbs", to_string(s.micro_batch), to_string(b)), x, false);
  }

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
  return e;
}

}  // namespace meshfit
