#include "search/pipeline_balancer.hpp"

#include <algorithm>
#include <limits>

#include "estimators/pipeline_layout.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "search/evaluator/step_time_evaluator.hpp"

namespace meshfit {

namespace {

// A stage's figures with `slots` slots and `full` of them fully recomputed: its peak and its
// time per micro-batch (τ_i), read off a layout that gives the other stages the remaining slots
// as evenly as they go (their counts do not change stage i's figures).
struct StageFigures {
  double peak = 0, tau = 0;
  bool ok = false;
};

StageFigures stage_figures(const Model& m, const Run& run, const Cluster& c, const Strategy& s, std::int64_t stage,
                           std::int64_t slots, std::int64_t full, std::int64_t total) {
  const std::int64_t others = total - slots, pp = s.pp;
  if (pp > 1 && others < pp - 1) return {};
  Run r = run;
  r.options.layers_per_vstage.assign(static_cast<std::size_t>(pp), 0);
  std::int64_t k = 0;
  for (std::int64_t i = 0; i < pp; ++i) {
    if (i == stage) {
      r.options.layers_per_vstage[static_cast<std::size_t>(i)] = slots;
    } else {
      r.options.layers_per_vstage[static_cast<std::size_t>(i)] = others / (pp - 1) + (k < others % (pp - 1) ? 1 : 0);
      ++k;
    }
  }
  if (s.recompute == Recompute::full) {
    r.options.full_layers_per_vstage.assign(static_cast<std::size_t>(pp), 0);
    r.options.full_layers_per_vstage[static_cast<std::size_t>(stage)] = full;
  }
  if (!layout_counts_valid(m, r, s)) return {};
  const MemoryReport mem = estimate_memory(m, r, c, s);
  const TimeReport t = estimate_step_time(m, r, c, s);
  return {mem.stages[static_cast<std::size_t>(stage)].device, t.stages[static_cast<std::size_t>(stage)].tau, true};
}

BalancedLayout figures_of(const Model& m, const Run& run, const Cluster& c, const Strategy& s) {
  const MemoryReport mem = estimate_memory(m, run, c, s);
  const TimeReport t = estimate_step_time(m, run, c, s);
  BalancedLayout b;
  b.peak_bytes = mem.peak;
  b.step_s = t.step;
  for (const auto& st : mem.stages) b.stage_peaks.push_back(st.device);
  for (const auto& st : t.stages) b.max_tau_s = std::max(b.max_tau_s, st.tau);
  const PipelineLayout layout = make_layout(m, run, s);
  for (std::int64_t i = 0; i < s.pp; ++i) {
    std::int64_t slots = layout.stage_layers(i), full = 0;
    for (const auto& v : layout.vstages) full += v.stage == i ? v.full_recompute : 0;
    if (i == 0 && run.options.account_embedding) ++slots;
    if (i == layout.head_stage && run.options.account_loss) ++slots;
    b.slots.push_back(slots);
    if (s.recompute == Recompute::full) b.recompute.push_back(full);
  }
  return b;
}

}  // namespace

Run with_layout(const Run& run, const BalancedLayout& layout) {
  Run r = run;
  r.options.layers_per_vstage = layout.slots;
  r.options.full_layers_per_vstage = layout.recompute;
  return r;
}

BalancedLayout current_layout(const Model& m, const Run& run, const Cluster& c, const Strategy& s) {
  return figures_of(m, run, c, s);
}

std::optional<BalancedLayout> balance_pipeline(const Model& m, const Run& run, const Cluster& c, const Strategy& s,
                                               double max_tau_ratio) {
  if (s.pp < 2 || s.vpp != 1 || s.schedule == Schedule::dualpipev) return std::nullopt;
  Run base = run;
  base.options.layers_per_vstage.clear();
  base.options.full_layers_per_vstage.clear();
  Strategy plain = s;
  plain.recompute_layers = 0;  // per-stage counts replace one count for every stage
  const BalancedLayout even = figures_of(m, base, c, s);
  const double tau_bound = even.max_tau_s * max_tau_ratio;
  std::int64_t total = 0;
  for (std::int64_t v : even.slots) total += v;
  const bool full = s.recompute == Recompute::full;
  const auto pp = static_cast<std::size_t>(s.pp);

  // Every stage's figures for every slot count it could hold — up to twice the even share and two
  // more, which a smallest peak never exceeds in practice and keeps DeepSeek-V3's 61 layers on
  // 16 stages to a few thousand estimates — and every recompute count.
  const std::int64_t share = (total + static_cast<std::int64_t>(pp) - 1) / static_cast<std::int64_t>(pp);
  const std::int64_t most = std::min(total - static_cast<std::int64_t>(pp) + 1, 2 * share + 2);
  std::vector<std::vector<std::vector<StageFigures>>> fig(pp);
  std::vector<double> peaks;
  for (std::size_t i = 0; i < pp; ++i) {
    fig[i].resize(static_cast<std::size_t>(most + 1));
    for (std::int64_t n = 1; n <= most; ++n) {
      const std::int64_t rmax = full ? n : 0;
      for (std::int64_t r = 0; r <= rmax; ++r) {
        fig[i][static_cast<std::size_t>(n)].push_back(
            stage_figures(m, base, c, plain, static_cast<std::int64_t>(i), n, r, total));
        const StageFigures& f = fig[i][static_cast<std::size_t>(n)].back();
        if (f.ok && f.tau <= tau_bound) peaks.push_back(f.peak);
      }
    }
  }
  std::sort(peaks.begin(), peaks.end());
  peaks.erase(std::unique(peaks.begin(), peaks.end()), peaks.end());

  // Within the peak bound P: each stage's largest slot count (with its cheapest recompute), and
  // for a count, the smallest recompute that fits P and the time bound (−1: none).
  auto least_recompute = [&](std::size_t i, std::int64_t n, double P) -> std::int64_t {
    const auto& row = fig[i][static_cast<std::size_t>(n)];
    for (std::size_t r = 0; r < row.size(); ++r) {
      if (row[r].ok && row[r].peak <= P && row[r].tau <= tau_bound) return static_cast<std::int64_t>(r);
    }
    return -1;
  };
  auto most_slots = [&](std::size_t i, double P) -> std::int64_t {
    for (std::int64_t n = most; n >= 1; --n) {
      if (least_recompute(i, n, P) >= 0) return n;
    }
    return 0;
  };
  auto reachable = [&](double P) {
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < pp; ++i) {
      const std::int64_t n = most_slots(i, P);
      if (n == 0) return false;
      sum += n;
    }
    return sum >= total;
  };
  std::size_t lo = 0, hi = peaks.size();  // the first reachable bound lies in [lo, hi)
  if (peaks.empty() || !reachable(peaks.back())) return std::nullopt;
  hi = peaks.size() - 1;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (reachable(peaks[mid])) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const double P = peaks[lo];

  // The layout under P: the largest counts, then slots taken from the slowest stage first (ties:
  // the higher stage) until they add up.
  BalancedLayout out;
  out.slots.resize(pp);
  std::vector<std::int64_t> rc(pp);
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < pp; ++i) {
    out.slots[i] = most_slots(i, P);
    rc[i] = least_recompute(i, out.slots[i], P);
    sum += out.slots[i];
  }
  auto tau_of = [&](std::size_t i) {
    return fig[i][static_cast<std::size_t>(out.slots[i])][static_cast<std::size_t>(rc[i])].tau;
  };
  while (sum > total) {
    std::size_t slowest = pp;
    for (std::size_t i = 0; i < pp; ++i) {
      if (out.slots[i] <= 1 || least_recompute(i, out.slots[i] - 1, P) < 0) continue;
      if (slowest == pp || tau_of(i) >= tau_of(slowest)) slowest = i;
    }
    if (slowest == pp) return std::nullopt;  // cannot happen: fewer slots never exceed P
    --out.slots[slowest];
    rc[slowest] = least_recompute(slowest, out.slots[slowest], P);
    --sum;
  }
  if (full) out.recompute = rc;
  const Run balanced = with_layout(base, out);
  BalancedLayout figures = figures_of(m, balanced, c, plain);
  figures.slots = out.slots;
  figures.recompute = out.recompute;
  return figures;
}

}  // namespace meshfit
