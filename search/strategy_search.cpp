#include "search/strategy_search.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <cmath>

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include "estimators/memory_model.hpp"
#include "estimators/step_time.hpp"
#include "search/strategy_key.hpp"

namespace meshfit {

bool score_less(const ScoredStrategy& a, const ScoredStrategy& b) {
  if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
  if (a.mem != b.mem) return a.mem < b.mem;
  return key_less(a.strategy, b.strategy);
}

std::vector<ScoredStrategy> pareto_front(std::vector<ScoredStrategy> fitting, bool dedupe_ties) {
  std::sort(fitting.begin(), fitting.end(), [](const ScoredStrategy& a, const ScoredStrategy& b) {
    if (a.mem != b.mem) return a.mem < b.mem;
    if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
    return key_less(a.strategy, b.strategy);
  });
  std::vector<ScoredStrategy> front;
  std::int64_t t_best = INT64_MAX;
  for (const auto& x : fitting) {
    if (x.time_ns < t_best) {
      front.push_back(x);
      t_best = x.time_ns;
    } else if (!dedupe_ties && x.time_ns == t_best && !front.empty() && x.mem == front.back().mem) {
      front.push_back(x);  // an exact tie with the previous front point
    }
  }
  std::sort(front.begin(), front.end(), score_less);
  return front;
}

namespace {

// The same strategy up to its recompute mode, n_rc and micro-batch size (and so m).
bool same_setting(const Strategy& a, const Strategy& b) {
  Strategy x = a, y = b;
  x.recompute = y.recompute = Recompute::none;
  x.recompute_layers = y.recompute_layers = 0;
  x.micro_batch = y.micro_batch = 1;
  x.num_microbatches = y.num_microbatches = 1;
  return x == y;
}

bool dominates(const ScoredStrategy& x, const ScoredStrategy& y) {
  return x.mem <= y.mem && x.time_ns <= y.time_ns && (x.mem < y.mem || x.time_ns < y.time_ns);
}

// One task's results; merged pairwise by parallel_reduce.
struct Partial {
  std::vector<ScoredStrategy> front;  // this task's non-dominated fitting strategies
  std::vector<ScoredStrategy> top;    // sorted by score_less, at most k
  std::int64_t enumerated = 0, valid = 0, fitting = 0, estimated = 0;
  std::array<std::int64_t, kRuleSlots> histogram{};
  std::optional<ScoredStrategy> closest;
  std::size_t k = 10;
  FitCloud cloud;

  void add_fitting(const ScoredStrategy& x) {
    add_front_only(x);
    add_top(x);
  }
  void add_top(const ScoredStrategy& x) {
    if (top.size() < k || score_less(x, top.back())) {
      top.insert(std::upper_bound(top.begin(), top.end(), x, score_less), x);
      if (top.size() > k) top.pop_back();
    }
  }
  void consider_closest(const ScoredStrategy& x) {
    if (!closest || x.mem < closest->mem || (x.mem == closest->mem && key_less(x.strategy, closest->strategy))) closest = x;
  }
  void join(const Partial& o) {
    enumerated += o.enumerated;
    valid += o.valid;
    fitting += o.fitting;
    estimated += o.estimated;
    for (std::size_t i = 0; i < kRuleSlots; ++i) histogram[i] += o.histogram[i];
    for (const auto& x : o.front) add_front_only(x);
    for (const auto& x : o.top) add_top(x);
    if (o.closest) consider_closest(*o.closest);
    cloud.merge(o.cloud);
  }
  void add_front_only(const ScoredStrategy& x) {
    for (const auto& y : front) {
      if (dominates(y, x)) return;
    }
    front.erase(std::remove_if(front.begin(), front.end(), [&](const ScoredStrategy& y) { return dominates(x, y); }),
                front.end());
    front.push_back(x);
  }
};

}  // namespace

SearchResult run_search(const SearchSpace& space, const SearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto triples = space.triples();
  const Model& m = *space.model;
  const Run& run = *space.run;
  const Cluster& cluster = *space.cluster;
  const double budget = cluster.device.capacity - options.headroom_bytes;
  std::atomic<std::size_t> done{0};
  std::atomic<bool> interrupted{false};
  // This search's token for the estimators' per-thread memos (zero_free_memo.hpp): a thread may
  // score strategies of several searches in turn (meshfit check runs them side by side).
  static std::atomic<std::uint64_t> searches{0};
  const std::uint64_t context = options.reuse ? ++searches : 0;
  // best_only with k = 1: the fastest fitting step time (ns) any thread has found.
  std::atomic<std::int64_t> fastest{INT64_MAX};

  Partial init;
  init.k = options.top_k;
  const Partial total = tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, triples.size(), 1), init,
      [&](const tbb::blocked_range<std::size_t>& range, Partial acc) {
        for (std::size_t t = range.begin(); t != range.end(); ++t) {
          if (options.stop && options.stop->load()) {
            interrupted = true;
            break;
          }
          bool b_run_failed = false;
          // A ZeRO setting whose model states alone overflow (see below), and its strategies' bound.
          bool zero_failed = false;
          Strategy failed_setting;
          space.for_each(triples[t], [&](const Strategy& s, const Position& at) {
            if (at.first) b_run_failed = false;
            acc.enumerated += at.weight;
            if (at.failed != Position::kValid) {
              acc.histogram[at.failed] += at.weight;
              return;
            }
            if (at.weight != 1) throw std::logic_error("a weighted H12-tail candidate passed every rule");
            ++acc.valid;
            // At fixed other values the peak is non-decreasing in b (memory-model.md §15), so
            // once a b does not fit, no larger b does: count them without estimating.
            if (options.prune && b_run_failed) return;
            if (options.prune && zero_failed && same_setting(s, failed_setting)) return;
            // Per-thread storage reused from estimate to estimate: scoring allocates nothing.
            thread_local MemoryScratch scratch;
            thread_local MemoryReport mem;
            thread_local TimeReport time;
            thread_local StepTimeScratch time_scratch;
            scratch.memo_context = context;
            time_scratch.memo_context = context;
            if (options.best_only) {
              // Skipped when even its floor is slower than the k-th fastest found (llround is
              // monotone: its step time in ns is then above it too, so it is not in the top-k).
              std::int64_t bar = acc.top.size() == acc.k ? acc.top.back().time_ns : INT64_MAX;
              if (acc.k == 1) bar = std::min(bar, fastest.load(std::memory_order_relaxed));
              if (bar != INT64_MAX) {
                const double floor = step_time_floor(time_scratch, m, run, cluster, s, scratch.prepare_layout(m, run, s));
                if (std::llround(floor * 1e9) > bar) return;
              }
            }
            ++acc.estimated;
            estimate_memory_into(mem, scratch, m, run, cluster, s, options.headroom_bytes);
            ScoredStrategy x;
            x.strategy = s;
            x.peak_bytes = mem.peak;
            x.mem = static_cast<std::int64_t>(std::ceil(mem.peak));
            x.peak_stage = mem.peak_stage;
            if (!mem.fits) {
              b_run_failed = true;
              acc.consider_closest(x);
              // Every recompute mode and micro-batch size under this ZeRO setting holds the same
              // model states and overheads (neither reads them, and the search's n_rc = 0 keeps
              // the same layer runs), and its peak is at least those (allocated ≥ the static
              // total, §11). When that floor overflows, none of them fits: they are skipped once
              // this task has something fitting (so `closest` is not reported) or the floor lies
              // above this task's closest (so none of them could be it).
              if (options.prune) {
                const double floor = mem.static_floor;
                if (floor > budget && (acc.fitting > 0 || floor > static_cast<double>(acc.closest->mem))) {
                  zero_failed = true;
                  failed_setting = s;
                }
              }
              return;
            }
            // It fits. Its step time is needed only if it could enter the top-k or the front (or
            // the cloud): not when its floor (step_time.hpp) is above the k-th fastest and a front
            // point at most as large is faster than the floor — it is then dominated.
            if (options.prune && !options.collect_cloud && !options.best_only && acc.top.size() == acc.k) {
              const std::int64_t floor_ns =
                  std::llround(step_time_floor(time_scratch, m, run, cluster, s, scratch.layout()) * 1e9);
              if (floor_ns > acc.top.back().time_ns &&
                  std::any_of(acc.front.begin(), acc.front.end(), [&](const ScoredStrategy& y) {
                    return y.mem <= x.mem && y.time_ns < floor_ns;
                  })) {
                ++acc.fitting;
                return;
              }
            }
            estimate_step_time_into(time, time_scratch, m, run, cluster, s, scratch.layout());  // the layout just made for s
            x.step_s = time.step;
            x.time_ns = std::llround(time.step * 1e9);
            x.tokens_per_sec_per_device = time.tokens_per_sec_per_device;
            x.mfu = time.mfu;
            ++acc.fitting;
            if (options.best_only) {
              acc.add_top(x);
              if (acc.k == 1) {
                std::int64_t seen = fastest.load(std::memory_order_relaxed);
                while (x.time_ns < seen && !fastest.compare_exchange_weak(seen, x.time_ns, std::memory_order_relaxed)) {
                }
              }
            } else {
              acc.add_fitting(x);
            }
            if (options.collect_cloud) acc.cloud.add(x.peak_bytes, budget, x.step_s);
          }, [&](std::size_t slot, std::int64_t count) {
            acc.enumerated += count;
            acc.histogram[slot] += count;
          });
          const std::size_t n = ++done;
          if (options.progress) options.progress(n, triples.size());
        }
        return acc;
      },
      [](Partial a, const Partial& b) {
        a.join(b);
        return a;
      });

  SearchResult r;
  r.budget = budget;
  r.front = pareto_front(total.front, options.dedupe_ties);
  r.top = total.top;
  for (auto& x : r.top) {
    x.dominated = std::none_of(r.front.begin(), r.front.end(), [&](const ScoredStrategy& f) {
      return f.mem == x.mem && f.time_ns == x.time_ns && !key_less(f.strategy, x.strategy) && !key_less(x.strategy, f.strategy);
    });
  }
  r.enumerated = total.enumerated;
  r.valid = total.valid;
  r.fitting = total.fitting;
  r.estimated = total.estimated;
  r.histogram = total.histogram;
  if (r.fitting == 0) r.closest = total.closest;
  r.interrupted = interrupted.load();
  r.cloud = total.cloud;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace meshfit
