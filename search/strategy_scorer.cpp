#include "search/strategy_scorer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "search/strategy_key.hpp"

namespace meshfit {

namespace {

// The same strategy up to its recompute mode, n_rc and micro-batch size (and so m).
bool same_setting(const Strategy& a, const Strategy& b) {
  return same_node(a, b) && a.zero == b.zero && a.shard_group == b.shard_group && a.offload == b.offload;
}
// The same strategy up to its ZeRO setting (z, G, offload), micro-batch size and m.
bool same_run_setting(const Strategy& a, const Strategy& b) {
  return same_node(a, b) && a.recompute == b.recompute && a.recompute_layers == b.recompute_layers;
}

}  // namespace

void TaskTally::add_top(const ScoredStrategy& x) {
  if (top.size() < k || score_less(x, top.back())) {
    top.insert(std::upper_bound(top.begin(), top.end(), x, score_less), x);
    if (top.size() > k) top.pop_back();
  }
}

void TaskTally::consider_closest(const ScoredStrategy& x) {
  if (!closest || x.mem < closest->mem || (x.mem == closest->mem && key_less(x.strategy, closest->strategy)))
    closest = x;
}

void TaskTally::join(const TaskTally& o) {
  enumerated += o.enumerated;
  valid += o.valid;
  fitting += o.fitting;
  estimated += o.estimated;
  for (std::size_t i = 0; i < kRuleSlots; ++i) histogram[i] += o.histogram[i];
  for (const auto& x : o.front.points()) front.add(x);
  for (const auto& x : o.top) add_top(x);
  if (o.closest) consider_closest(*o.closest);
  cloud.merge(o.cloud);
}

void SharedBounds::add(std::int64_t mem, std::int64_t time_ns) {
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

std::int64_t SharedBounds::read(std::vector<std::pair<std::int64_t, std::int64_t>>& front) {
  const std::lock_guard<std::mutex> lock(mutex_);
  front = front_;
  return top_.size() == k_ ? top_.back() : INT64_MAX;
}

TaskScorer::TaskScorer(const ScoringSetup& setup, ScoringState& state, std::atomic<std::int64_t>& fastest,
                       SharedBounds& shared, TaskTally& tally)
    : setup_(setup),
      m_(*setup.space.model),
      run_(*setup.space.run),
      cluster_(*setup.space.cluster),
      state_(state),
      fastest_(fastest),
      shared_(shared),
      acc_(tally),
      // A micro-batch run is settled as a whole (settle_run) when only the front and the top-k
      // are wanted; otherwise each strategy in turn.
      settle_runs_(setup.passes.enabled(PruningPass::micro_batch_bisection) && !setup.best_only &&
                   !setup.collect_cloud) {}

void ScoringState::open_triple(const TripleDomains& d) {
  const TripleValues values{d.tp, d.cp, d.algos, d.eps, d.etps, d.bs};
  memory.kinds.open(values, 1);
  time.layer_times.open(values, 2);  // flag 1: DualPipeV
  triple_open = true;
}

void TaskScorer::add(const Strategy& s) {
  if (!state_.triple_open) state_.open_triple(state_.walk.domains);
  if (settle_runs_) {
    if (pending_.empty()) run_strategy_ = s;
    pending_.emplace_back(s.micro_batch, s.num_microbatches);
  } else {
    score_in_turn(s);
  }
}

void TaskScorer::open_run() {
  if (settle_runs_) {
    flush();
  } else {
    b_run_failed_ = false;
  }
}

void TaskScorer::flush() {
  if (!pending_.empty()) settle_run();
  pending_.clear();
}

// The memory estimate of `s` as a scored strategy (its time not yet set); `fits` from the report.
ScoredStrategy TaskScorer::estimate_memory(const Strategy& s, bool& fits) {
  ++acc_.estimated;
  estimate_memory_into(state_.mem, state_.memory, m_, run_, cluster_, s, setup_.headroom_bytes, false);
  ScoredStrategy x;
  x.strategy = s;
  x.peak_bytes = state_.mem.peak;
  x.mem = static_cast<std::int64_t>(std::ceil(state_.mem.peak));
  x.peak_stage = state_.mem.peak_stage;
  fits = state_.mem.fits;
  return x;
}

// The plan of `s`'s layout, shared with the memory estimates.
const LayoutPlan& TaskScorer::plan_of(const Strategy& s) { return state_.memory.layout_plan(m_, run_, s); }

std::int64_t TaskScorer::floor_ns(const Strategy& s) {
  return std::llround(step_time_floor(state_.time, m_, run_, cluster_, s, plan_of(s)) * 1e9);
}

void TaskScorer::estimate_time(ScoredStrategy& x) {
  estimate_step_time_into(state_.time_report, state_.time, m_, run_, cluster_, x.strategy, plan_of(x.strategy));
  x.step_s = state_.time_report.step;
  x.time_ns = std::llround(state_.time_report.step * 1e9);
  x.tokens_per_sec_per_device = state_.time_report.tokens_per_sec_per_device;
  x.mfu = state_.time_report.mfu;
}

// The dominance_floor pass: true when a fitting strategy whose peak is at least `mem_floor` and
// whose step-time floor is `floor` (ns) can be neither in the top-k nor on the front: the floor is
// above the k-th fastest (llround is monotone, so its step time in ns is too), and a front point
// at most `mem_floor` large is faster than the floor, so it dominates the strategy.
// `floor` is −1 until needed (the top-k is full), then s's, kept for the next call on s.
// The k fastest and the front points may be this task's or any task's (SharedBounds, as read at
// the start of the triple): either set holds real fitting strategies.
bool TaskScorer::dominated_fitting(std::int64_t mem_floor, const Strategy& s, std::int64_t& floor) {
  if (!on(PruningPass::dominance_floor)) return false;
  const std::int64_t bar = std::min(acc_.top.size() == acc_.k ? acc_.top.back().time_ns : INT64_MAX, shared_bar_);
  if (bar == INT64_MAX) return false;
  if (floor < 0) floor = floor_ns(s);
  if (floor <= bar) return false;
  const auto& front = acc_.front.points();
  return std::any_of(front.begin(), front.end(),
                     [&](const ScoredStrategy& y) { return y.mem <= mem_floor && y.time_ns < floor; }) ||
         std::any_of(shared_front_.begin(), shared_front_.end(),
                     [&](const auto& y) { return y.first <= mem_floor && y.second < floor; });
}

// The zero_setting_overflow pass: a ZeRO setting whose model states and overheads alone overflow.
// Every recompute mode and micro-batch size under it holds the same model states and overheads
// (neither reads them, and the search's n_rc = 0 keeps the same layer runs), and its peak is at
// least those (allocated ≥ the static total, §11), so none of them fits. They are skipped once
// this task has something fitting (so `closest` is not reported) or the floor lies above this
// task's closest (so none of them could be it).
void TaskScorer::note_overflow(const Strategy& s) {
  if (!on(PruningPass::zero_setting_overflow)) return;
  // With a fit margin (--fit-margin), the smallest of the recompute modes' factors bounds them all.
  const double floor = state_.mem.static_floor;
  if (floor * run_.options.smallest_fit_factor() > setup_.budget &&
      (acc_.fitting > 0 || floor > static_cast<double>(acc_.closest->mem))) {
    zero_failed_ = true;
    failed_setting_ = s;
  }
}

bool TaskScorer::in_failed_setting(const Strategy& s) const { return zero_failed_ && same_setting(s, failed_setting_); }

void TaskScorer::record_fitting(ScoredStrategy& x) {
  estimate_time(x);
  ++acc_.fitting;
  acc_.add_fitting(x);
  shared_.add(x.mem, x.time_ns);
}

// The micro_batch_bisection pass: the strategies of one micro-batch run (b ascending, all valid).
// At fixed gb the peak is non-decreasing in b (memory-model.md §15), so the ones that fit are a
// prefix: its end is found by bisection, and a fitting strategy after an estimated one has at
// least that one's peak.
void TaskScorer::settle_run() {
  const std::size_t n = pending_.size();
  acc_.valid += static_cast<std::int64_t>(n);
  if (in_failed_setting(at(0))) return;
  if (!peak_rises_with_micro_batch(run_, run_strategy_)) {
    // The peak may fall as b rises (memory_evaluator.hpp): each size on its own estimate.
    for (std::size_t i = 0; i < n; ++i) settle_alone(at(i));
    return;
  }
  estimates_.resize(n);
  for (ScoredStrategy& e : estimates_) e.mem = 0;  // the "not estimated" mark (settle_prefix)
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
    static_floor = state_.mem.static_floor;
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
  settle_prefix(static_cast<std::size_t>(hi), static_floor);
}

// The run's strategies [0, end) fit. One not estimated has at least the run's static floor and
// the peak of any estimated before it: those whose floors (that peak, and the step-time floor)
// show them dominated and out of the top-k are counted without any estimate.
void TaskScorer::settle_prefix(std::size_t end, double static_floor) {
  std::int64_t mem_floor = static_cast<std::int64_t>(std::ceil(static_floor));
  for (std::size_t i = 0; i < end; ++i) {
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
void TaskScorer::settle_alone(const Strategy& s) {
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

void TaskScorer::remember_end(std::size_t end) {
  const std::size_t mode = static_cast<std::size_t>(run_strategy_.recompute);
  if (after_mode_ != kNoMode) {
    mode_shift_[mode] = static_cast<std::ptrdiff_t>(end) - static_cast<std::ptrdiff_t>(after_mode_);
    after_mode_ = kNoMode;
  }
  last_node_[mode] = run_strategy_;  // compared by same_run_setting (b and m aside)
  last_end_[mode] = end;
}

// One strategy at a time, b rising within a run (the plain search, best-only and the cloud).
void TaskScorer::score_in_turn(const Strategy& s) {
  ++acc_.valid;
  // The micro_batch_overflow pass: once a b does not fit, no larger b does (memory-model.md §15)
  // where the peak rises with b: counted without estimating.
  if ((on(PruningPass::micro_batch_overflow) && b_run_failed_) || in_failed_setting(s)) return;
  if (setup_.best_only && on(PruningPass::top_k_floor)) {
    // The top_k_floor pass: skipped when even its floor is slower than the k-th fastest found
    // (llround is monotone: its step time in ns is then above it too, so it is not in the top-k).
    std::int64_t bar = acc_.top.size() == acc_.k ? acc_.top.back().time_ns : INT64_MAX;
    if (acc_.k == 1) bar = std::min(bar, fastest_.load(std::memory_order_relaxed));
    if (bar != INT64_MAX && floor_ns(s) > bar) return;
  }
  bool fits = false;
  ScoredStrategy x = estimate_memory(s, fits);
  if (!fits) {
    b_run_failed_ = peak_rises_with_micro_batch(run_, s);
    acc_.consider_closest(x);
    note_overflow(s);
    return;
  }
  std::int64_t floor = -1;
  if (!setup_.collect_cloud && !setup_.best_only && dominated_fitting(x.mem, s, floor)) {
    ++acc_.fitting;
    return;
  }
  estimate_time(x);
  ++acc_.fitting;
  if (setup_.best_only) {
    acc_.add_top(x);
    if (acc_.k == 1) {
      std::int64_t seen = fastest_.load(std::memory_order_relaxed);
      while (x.time_ns < seen && !fastest_.compare_exchange_weak(seen, x.time_ns, std::memory_order_relaxed)) {
      }
    }
  } else {
    acc_.add_fitting(x);
  }
  if (setup_.collect_cloud) acc_.cloud.add(x.peak_bytes, setup_.budget, x.step_s);
}

// The run's k-th strategy, in run_strategy_ (valid until the next call).
const Strategy& TaskScorer::at(std::size_t k) {
  run_strategy_.micro_batch = pending_[k].first;
  run_strategy_.num_microbatches = pending_[k].second;
  return run_strategy_;
}

}  // namespace meshfit
