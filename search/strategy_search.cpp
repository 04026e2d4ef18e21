#include "search/strategy_search.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <cmath>
#include <mutex>

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
  return same_node(a, b) && a.zero == b.zero && a.shard_group == b.shard_group;
}
// The same strategy up to its ZeRO stage and shard group, micro-batch size and m.
bool same_run_setting(const Strategy& a, const Strategy& b) {
  return same_node(a, b) && a.recompute == b.recompute && a.recompute_layers == b.recompute_layers;
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
    if (!closest || x.mem < closest->mem || (x.mem == closest->mem && key_less(x.strategy, closest->strategy)))
      closest = x;
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

// What every task has found so far, for the others' dominance tests: the times of the k fastest
// fitting strategies recorded and the (memory, time) points none of them dominates. Each fitting
// strategy is added once, when its time is estimated, so k distinct strategies stand behind the
// k-th time; a task reads a copy, taken at the start of each triple.
class SharedBounds {
 public:
  explicit SharedBounds(std::size_t k) : k_(k) {}
  void add(std::int64_t mem, std::int64_t time_ns) {
    const std::lock_guard<std::mutex> lock(mutex_);
    top_.insert(std::upper_bound(top_.begin(), top_.end(), time_ns), time_ns);
    if (top_.size() > k_) top_.pop_back();
    for (const auto& [m, t] : front_) {
      if (m <= mem && t <= time_ns) return;  // dominated or equal: adds nothing to the tests
    }
    front_.erase(std::remove_if(front_.begin(), front_.end(),
                                [&](const auto& p) { return mem <= p.first && time_ns <= p.second; }),
                 front_.end());
    front_.emplace_back(mem, time_ns);
  }
  // The k-th fastest time (INT64_MAX until k are known) and the points, into `front`.
  std::int64_t read(std::vector<std::pair<std::int64_t, std::int64_t>>& front) {
    const std::lock_guard<std::mutex> lock(mutex_);
    front = front_;
    return top_.size() == k_ ? top_.back() : INT64_MAX;
  }

 private:
  std::mutex mutex_;
  std::size_t k_;
  std::vector<std::int64_t> top_;
  std::vector<std::pair<std::int64_t, std::int64_t>> front_;
};

// One thread's scoring of the valid strategies a task visits, into its Partial.
class TaskScorer {
 public:
  TaskScorer(const SearchSpace& space, const SearchOptions& options, double budget, std::uint64_t context,
             std::atomic<std::int64_t>& fastest, SharedBounds& shared, Partial& acc)
      : m_(*space.model),
        run_(*space.run),
        cluster_(*space.cluster),
        options_(options),
        budget_(budget),
        context_(context),
        fastest_(fastest),
        shared_(shared),
        acc_(acc),
        // A micro-batch run is settled as a whole (settle_run) when only the front and the top-k
        // are wanted; otherwise each strategy in turn.
        settle_runs_(options.prune && !options.best_only && !options.collect_cloud) {}

  // A valid strategy of the current run (b rising, everything but b and m fixed).
  void add(const Strategy& s) {
    if (settle_runs_) {
      if (pending_.empty()) run_strategy_ = s;
      pending_.emplace_back(s.micro_batch, s.num_microbatches);
    } else {
      score_in_turn(s);
    }
  }
  // A triple starts: what the other tasks have found.
  void read_shared() { shared_bar_ = shared_.read(shared_front_); }
  // A run opens (possibly with an invalid candidate): the pending one is complete.
  void open_run() {
    if (settle_runs_) {
      flush();
    } else {
      b_run_failed_ = false;
    }
  }
  // The end of the enumeration of a triple: its last run is complete.
  void flush() {
    if (!pending_.empty()) settle_run();
    pending_.clear();
  }

 private:
  // Per-thread storage reused from estimate to estimate: scoring allocates nothing.
  struct Scratch {
    MemoryScratch memory;
    MemoryReport mem;
    TimeReport time_report;
    StepTimeScratch time;
  };
  Scratch& scratch() const {
    thread_local Scratch s;
    s.memory.memo_context = context_;
    s.time.memo_context = context_;
    return s;
  }

  // The memory estimate of `s` as a scored strategy (its time not yet set); `fits` from the report.
  ScoredStrategy estimate_memory(const Strategy& s, bool& fits) {
    Scratch& sc = scratch();
    ++acc_.estimated;
    estimate_memory_into(sc.mem, sc.memory, m_, run_, cluster_, s, options_.headroom_bytes, false);
    ScoredStrategy x;
    x.strategy = s;
    x.peak_bytes = sc.mem.peak;
    x.mem = static_cast<std::int64_t>(std::ceil(sc.mem.peak));
    x.peak_stage = sc.mem.peak_stage;
    fits = sc.mem.fits;
    return x;
  }
  // The plan of `s`'s layout, shared with the memory estimates.
  const LayoutPlan& plan_of(Scratch& sc, const Strategy& s) { return sc.memory.layout_plan(m_, run_, s); }
  std::int64_t floor_ns(const Strategy& s) {
    Scratch& sc = scratch();
    return std::llround(step_time_floor(sc.time, m_, run_, cluster_, s, plan_of(sc, s)) * 1e9);
  }
  void estimate_time(ScoredStrategy& x) {
    Scratch& sc = scratch();
    estimate_step_time_into(sc.time_report, sc.time, m_, run_, cluster_, x.strategy, plan_of(sc, x.strategy));
    x.step_s = sc.time_report.step;
    x.time_ns = std::llround(sc.time_report.step * 1e9);
    x.tokens_per_sec_per_device = sc.time_report.tokens_per_sec_per_device;
    x.mfu = sc.time_report.mfu;
  }

  // True when a fitting strategy whose peak is at least `mem_floor` and whose step-time floor is
  // `floor` (ns) can be neither in the top-k nor on the front: the floor is above the k-th
  // fastest (llround is monotone, so its step time in ns is too), and a front point at most
  // `mem_floor` large is faster than the floor, so it dominates the strategy.
  // `floor` is −1 until needed (the top-k is full), then s's, kept for the next call on s.
  // The k fastest and the front points may be this task's or any task's (SharedBounds, as read at
  // the start of the triple): either set holds real fitting strategies.
  bool dominated_fitting(std::int64_t mem_floor, const Strategy& s, std::int64_t& floor) {
    const std::int64_t bar = std::min(acc_.top.size() == acc_.k ? acc_.top.back().time_ns : INT64_MAX, shared_bar_);
    if (bar == INT64_MAX) return false;
    if (floor < 0) floor = floor_ns(s);
    if (floor <= bar) return false;
    return std::any_of(acc_.front.begin(), acc_.front.end(),
                       [&](const ScoredStrategy& y) { return y.mem <= mem_floor && y.time_ns < floor; }) ||
           std::any_of(shared_front_.begin(), shared_front_.end(),
                       [&](const auto& y) { return y.first <= mem_floor && y.second < floor; });
  }

  // A ZeRO setting whose model states and overheads alone overflow: every recompute mode and
  // micro-batch size under it holds the same model states and overheads (neither reads them, and
  // the search's n_rc = 0 keeps the same layer runs), and its peak is at least those (allocated ≥
  // the static total, §11), so none of them fits. They are skipped once this task has something
  // fitting (so `closest` is not reported) or the floor lies above this task's closest (so none
  // of them could be it).
  void note_overflow(const Strategy& s) {
    const double floor = scratch().mem.static_floor;
    if (floor > budget_ && (acc_.fitting > 0 || floor > static_cast<double>(acc_.closest->mem))) {
      zero_failed_ = true;
      failed_setting_ = s;
    }
  }
  bool in_failed_setting(const Strategy& s) const { return zero_failed_ && same_setting(s, failed_setting_); }

  void record_fitting(ScoredStrategy& x) {
    estimate_time(x);
    ++acc_.fitting;
    acc_.add_fitting(x);
    shared_.add(x.mem, x.time_ns);
  }

  // The strategies of one micro-batch run (b ascending, all valid). At fixed gb the peak is
  // non-decreasing in b (memory-model.md §15, the property the search prunes with), so the ones
  // that fit are a prefix: its end is found by bisection, and a fitting strategy after an
  // estimated one has at least that one's peak. Those whose floors (that peak, and the step-time
  // floor) show them dominated and out of the top-k are counted without any estimate.
  void settle_run() {
    const std::size_t n = pending_.size();
    acc_.valid += static_cast<std::int64_t>(n);
    if (in_failed_setting(at(0))) return;
    if (!peak_rises_with_micro_batch(run_, run_strategy_)) {
      // The peak may fall as b rises (memory_model.hpp): each size on its own estimate.
      for (std::size_t i = 0; i < n; ++i) settle_alone(at(i));
      return;
    }
    estimates_.resize(n);
    for (ScoredStrategy& e : estimates_) e.mem = 0;  // the "not estimated" mark (below)
    double static_floor = 0;                         // the same for the whole run (it reads neither b nor m)
    // The number of b that fit, `hi`, from `lo` (the largest index known to fit, −1: none) and
    // `hi` (the smallest known not to, n: none). The first guess is where the previous ZeRO
    // setting's run of this setting and mode ended (on DeepSeek-V3 1,024 half the time the same
    // b, a third of the time the next), so that a run usually takes the two estimates either side
    // of its end; without one, the smallest b first (most runs then fail there), then bisection.
    std::ptrdiff_t lo = -1, hi = static_cast<std::ptrdiff_t>(n);
    auto probe = [&](std::ptrdiff_t i) {
      const auto k = static_cast<std::size_t>(i);
      bool fits = false;
      estimates_[k] = estimate_memory(at(k), fits);
      static_floor = scratch().mem.static_floor;
      if (fits) {
        lo = i;
      } else {
        hi = i;
        acc_.consider_closest(estimates_[k]);
      }
    };
    const std::size_t mode = static_cast<std::size_t>(run_strategy_.recompute);
    std::ptrdiff_t guess = 0;
    if (same_run_setting(last_node_[mode], run_strategy_)) {
      guess = static_cast<std::ptrdiff_t>(last_end_[mode]);
    } else if (mode > 0 && same_setting(last_node_[mode - 1], run_strategy_)) {
      // The first run of this mode under the node: the previous mode's end under the same ZeRO
      // setting (the modes are enumerated in turn within it), moved by as much as this mode's
      // end moved from the previous mode's the last time both were settled so.
      after_mode_ = last_end_[mode - 1];
      guess = std::clamp<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(after_mode_) + mode_shift_[mode], 0,
                                         static_cast<std::ptrdiff_t>(n));
    }
    const auto none_fails = static_cast<std::ptrdiff_t>(n);
    if (guess < none_fails) probe(guess);  // expected not to fit
    if (hi == guess && guess > 0) {
      probe(guess - 1);  // expected to fit
    } else if (lo == guess && guess + 1 < none_fails) {
      probe(guess + 1);
    }
    while (hi - lo > 1) probe(hi == none_fails ? hi - 1 : lo + (hi - lo) / 2);
    remember_end(static_cast<std::size_t>(hi));
    if (hi == 0) {
      note_overflow(at(0));
      return;
    }
    // The run's strategies [0, hi) fit. One not estimated has at least the run's static floor and the peak of
    // any estimated before it.
    std::int64_t mem_floor = static_cast<std::int64_t>(std::ceil(static_floor));
    for (std::size_t i = 0; i < static_cast<std::size_t>(hi); ++i) {
      ScoredStrategy& x = estimates_[i];
      const bool estimated = x.mem > 0;  // a peak holds at least the CUDA context
      if (estimated) mem_floor = x.mem;
      std::int64_t floor = -1;
      if (dominated_fitting(mem_floor, at(i), floor)) {
        ++acc_.fitting;
        continue;
      }
      if (!estimated) {
        bool fits = false;
        x = estimate_memory(at(i), fits);
        if (!fits) throw std::logic_error("a micro-batch run whose peak falls as b rises");
        mem_floor = x.mem;
        if (dominated_fitting(mem_floor, at(i), floor)) {
          ++acc_.fitting;
          continue;
        }
      }
      record_fitting(x);
    }
  }

  // A strategy of a run whose peak is not monotone in b: its own estimate decides it (the same
  // steps as score_in_turn's, without the b pruning).
  void settle_alone(const Strategy& s) {
    if (in_failed_setting(s)) return;
    bool fits = false;
    ScoredStrategy x = estimate_memory(s, fits);
    if (!fits) {
      acc_.consider_closest(x);
      note_overflow(s);
      return;
    }
    std::int64_t floor = -1;
    if (dominated_fitting(x.mem, s, floor)) {
      ++acc_.fitting;
      return;
    }
    record_fitting(x);
  }

  void remember_end(std::size_t end) {
    const std::size_t mode = static_cast<std::size_t>(run_strategy_.recompute);
    if (after_mode_ != kNoMode) {
      mode_shift_[mode] = static_cast<std::ptrdiff_t>(end) - static_cast<std::ptrdiff_t>(after_mode_);
      after_mode_ = kNoMode;
    }
    last_node_[mode] = run_strategy_;  // compared by same_run_setting (b and m aside)
    last_end_[mode] = end;
  }

  // One strategy at a time, b rising within a run (the plain search, best-only and the cloud).
  void score_in_turn(const Strategy& s) {
    ++acc_.valid;
    // Once a b does not fit, no larger b does (memory-model.md §15) where the peak rises with b:
    // counted without estimating.
    if (options_.prune && (b_run_failed_ || in_failed_setting(s))) return;
    if (options_.best_only) {
      // Skipped when even its floor is slower than the k-th fastest found (llround is monotone:
      // its step time in ns is then above it too, so it is not in the top-k).
      std::int64_t bar = acc_.top.size() == acc_.k ? acc_.top.back().time_ns : INT64_MAX;
      if (acc_.k == 1) bar = std::min(bar, fastest_.load(std::memory_order_relaxed));
      if (bar != INT64_MAX && floor_ns(s) > bar) return;
    }
    bool fits = false;
    ScoredStrategy x = estimate_memory(s, fits);
    if (!fits) {
      b_run_failed_ = peak_rises_with_micro_batch(run_, s);
      acc_.consider_closest(x);
      if (options_.prune) note_overflow(s);
      return;
    }
    std::int64_t floor = -1;
    if (options_.prune && !options_.collect_cloud && !options_.best_only && dominated_fitting(x.mem, s, floor)) {
      ++acc_.fitting;
      return;
    }
    estimate_time(x);
    ++acc_.fitting;
    if (options_.best_only) {
      acc_.add_top(x);
      if (acc_.k == 1) {
        std::int64_t seen = fastest_.load(std::memory_order_relaxed);
        while (x.time_ns < seen && !fastest_.compare_exchange_weak(seen, x.time_ns, std::memory_order_relaxed)) {
        }
      }
    } else {
      acc_.add_fitting(x);
    }
    if (options_.collect_cloud) acc_.cloud.add(x.peak_bytes, budget_, x.step_s);
  }

  const Model& m_;
  const Run& run_;
  const Cluster& cluster_;
  const SearchOptions& options_;
  const double budget_;
  const std::uint64_t context_;
  std::atomic<std::int64_t>& fastest_;
  SharedBounds& shared_;
  std::int64_t shared_bar_ = INT64_MAX;
  std::vector<std::pair<std::int64_t, std::int64_t>> shared_front_;
  Partial& acc_;
  const bool settle_runs_;
  bool b_run_failed_ = false;
  bool zero_failed_ = false;  // the ZeRO setting of failed_setting_ overflows on its own
  Strategy failed_setting_;
  // Per recompute mode, the last settled run's first strategy and where its fitting prefix ended.
  std::array<Strategy, 3> last_node_{};
  std::array<std::size_t, 3> last_end_{};
  // Per mode, its run's end minus the previous mode's under the same node and ZeRO setting, the
  // last time a run started from the previous mode's end (`after_mode_`, that end, meanwhile).
  static constexpr std::size_t kNoMode = SIZE_MAX;
  std::array<std::ptrdiff_t, 3> mode_shift_{};
  std::size_t after_mode_ = kNoMode;
  // The current run's valid strategies (settle_runs_): the run's strategy, and each one's (b, m).
  Strategy run_strategy_;
  std::vector<std::pair<std::int64_t, std::int64_t>> pending_;
  // The run's k-th strategy, in run_strategy_ (valid until the next call).
  const Strategy& at(std::size_t k) {
    run_strategy_.micro_batch = pending_[k].first;
    run_strategy_.num_microbatches = pending_[k].second;
    return run_strategy_;
  }
  std::vector<ScoredStrategy> estimates_;  // their memory estimates where made (mem 0: none)
};

}  // namespace

namespace {
struct Stopped {};  // thrown out of a triple's walk when the stop flag is seen
}  // namespace

SearchResult run_search(const SearchSpace& space, const SearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto triples = space.triples();
  const double budget = space.cluster->device.capacity - options.headroom_bytes;
  std::atomic<std::size_t> done{0};
  std::atomic<bool> interrupted{false};
  // This search's token for the estimators' per-thread memos (zero_free_memo.hpp): a thread may
  // score strategies of several searches in turn (meshfit check runs them side by side).
  static std::atomic<std::uint64_t> searches{0};
  const std::uint64_t context = options.reuse ? ++searches : 0;
  // best_only with k = 1: the fastest fitting step time (ns) any thread has found.
  std::atomic<std::int64_t> fastest{INT64_MAX};
  SharedBounds shared(options.top_k);

  Partial init;
  init.k = options.top_k;
  const Partial total = tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, triples.size(), 1), init,
      [&](const tbb::blocked_range<std::size_t>& range, Partial acc) {
        TaskScorer scorer(space, options, budget, context, fastest, shared, acc);
        std::size_t polls = 0;
        for (std::size_t t = range.begin(); t != range.end(); ++t) {
          if (options.stop && options.stop->load()) {
            interrupted = true;
            break;
          }
          scorer.read_shared();
          try {
            space.for_each(
                triples[t],
                [&](const Strategy& s, const Position& at) {
                  // One triple's walk can last many seconds on the largest spaces: the stop flag is
                  // read every 64 micro-batch runs too, so that any search stops within a fraction of one.
                  if (at.first && options.stop && (++polls & 63) == 0 && options.stop->load()) throw Stopped{};
                  if (at.first) scorer.open_run();
                  acc.enumerated += at.weight;
                  if (at.failed != Position::kValid) {
                    acc.histogram[at.failed] += at.weight;
                    return;
                  }
                  if (at.weight != 1) throw std::logic_error("a weighted H12-tail candidate passed every rule");
                  scorer.add(s);
                },
                [&](std::size_t slot, std::int64_t count) {
                  acc.enumerated += count;
                  acc.histogram[slot] += count;
                });
          } catch (const Stopped&) {  // the triple's open run is left unscored: the result is marked partial
            interrupted = true;
            break;
          }
          scorer.flush();
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
      return f.mem == x.mem && f.time_ns == x.time_ns && !key_less(f.strategy, x.strategy) &&
             !key_less(x.strategy, f.strategy);
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
