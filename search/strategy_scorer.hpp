// The scoring of the valid strategies a search task visits: each one's memory and step time from
// the evaluator (search/evaluator), with the pruning passes (pruning_passes.hpp) that settle
// strategies without an estimate, into the task's tally (front, top-k, counts). One scorer per
// task; the evaluator's storage is the thread's, passed in (ScoringState), never a static.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "search/evaluator/memory_evaluator.hpp"
#include "search/evaluator/step_time_evaluator.hpp"
#include "search/fit_cloud.hpp"
#include "search/pareto_front.hpp"
#include "search/pruning_passes.hpp"
#include "search/rule_plan.hpp"
#include "search/search_space.hpp"
#include "search/triple_domains.hpp"

namespace meshfit {

// One task's results; merged pairwise by parallel_reduce.
struct TaskTally {
  NonDominatedSet front;            // this task's non-dominated fitting strategies
  std::vector<ScoredStrategy> top;  // sorted by score_less, at most k
  std::int64_t enumerated = 0, valid = 0, fitting = 0, estimated = 0;
  std::array<std::int64_t, kRuleSlots> histogram{};
  std::optional<ScoredStrategy> closest;
  std::size_t k = 10;
  FitCloud cloud;

  void add_fitting(const ScoredStrategy& x) {
    front.add(x);
    add_top(x);
  }
  void add_top(const ScoredStrategy& x);
  void consider_closest(const ScoredStrategy& x);
  void join(const TaskTally& o);
};

// What every task has found so far, for the others' dominance tests: the times of the k fastest
// fitting strategies recorded and the (memory, time) points none of them dominates. Each fitting
// strategy is added once, when its time is estimated, so k distinct strategies stand behind the
// k-th time; a task reads a copy, taken at the start of each triple.
class SharedBounds {
 public:
  explicit SharedBounds(std::size_t k) : k_(k) {}
  void add(std::int64_t mem, std::int64_t time_ns);
  // The k-th fastest time (INT64_MAX until k are known) and the points, into `front`.
  std::int64_t read(std::vector<std::pair<std::int64_t, std::int64_t>>& front);

 private:
  std::mutex mutex_;
  std::size_t k_;
  std::vector<std::int64_t> top_;
  std::vector<std::pair<std::int64_t, std::int64_t>> front_;
};

// One thread's storage for scoring: the evaluator's scratches and reports and the space walk's
// storage, reused from strategy to strategy (scoring allocates nothing once warm). One per thread
// in a SearchWorkspace (search_workspace.hpp), handed to each task that thread runs; `begin` tells
// it which search the task belongs to.
struct ScoringState {
  ScoringState() = default;
  ScoringState(const ScoringState&) = delete;
  ScoringState& operator=(const ScoringState&) = delete;
  // `context`: the search's token from its workspace (0: no reuse across strategies). The
  // evaluator keeps what it reuses under it, so a state serves searches of other models in turn;
  // `constants`, the search's (precompute_step_constants), outlive the task.
  void begin(std::uint64_t context, const StepConstants& constants) {
    memory.memo_context = context;
    time.memo_context = context;
    time.constants = &constants;
    close_triple();
  }
  // The task is done: nothing of its search is read again from this state.
  void end() {
    time.constants = nullptr;
    close_triple();
  }
  // The evaluator's tables over a triple's values (triple_table.hpp), opened on the walk's domains
  // once they are filled (at the triple's first valid strategy) and closed when its walk ends.
  void open_triple(const TripleDomains& d);
  void close_triple() {
    memory.kinds.close();
    time.layer_times.close();
    triple_open = false;
  }
  bool triple_open = false;
  MemoryScratch memory;
  MemoryReport mem;
  TimeReport time_report;
  StepTimeScratch time;
  TripleWalkStorage walk;
};

struct ScoringSetup {
  const SearchSpace& space;
  PruningPasses passes;
  std::size_t top_k;
  bool best_only, collect_cloud;
  double headroom_bytes, budget;
};

// One task's scoring of the valid strategies it visits, into its tally.
class TaskScorer {
 public:
  TaskScorer(const ScoringSetup& setup, ScoringState& state, std::atomic<std::int64_t>& fastest, SharedBounds& shared,
             TaskTally& tally);

  // A valid strategy of the current run (b rising, everything but b and m fixed).
  void add(const Strategy& s);
  // A triple starts: what the other tasks have found.
  void begin_triple() {
    state_.close_triple();
    shared_bar_ = shared_.read(shared_front_);
  }
  // A run opens (possibly with an invalid candidate): the pending one is complete.
  void open_run();
  // The end of the enumeration of a triple: its last run is complete.
  void end_triple() {
    flush();
    state_.close_triple();
  }

 private:
  void flush();  // the pending run settled
  bool on(PruningPass p) const { return setup_.passes.enabled(p); }
  ScoredStrategy estimate_memory(const Strategy& s, bool& fits);
  const LayoutPlan& plan_of(const Strategy& s);
  std::int64_t floor_ns(const Strategy& s);
  void estimate_time(ScoredStrategy& x);
  bool dominated_fitting(std::int64_t mem_floor, const Strategy& s, std::int64_t& floor);
  void note_overflow(const Strategy& s);
  bool in_failed_setting(const Strategy& s) const;
  void record_fitting(ScoredStrategy& x);
  void settle_run();
  void settle_prefix(std::size_t end, double static_floor);
  void settle_alone(const Strategy& s);
  void remember_end(std::size_t end);
  void score_in_turn(const Strategy& s);
  const Strategy& at(std::size_t k);

  const ScoringSetup& setup_;
  const Model& m_;
  const Run& run_;
  const Cluster& cluster_;
  ScoringState& state_;
  std::atomic<std::int64_t>& fastest_;
  SharedBounds& shared_;
  std::int64_t shared_bar_ = INT64_MAX;
  std::vector<std::pair<std::int64_t, std::int64_t>> shared_front_;
  TaskTally& acc_;
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
  std::vector<ScoredStrategy> estimates_;  // their memory estimates where made (mem 0: none)
};

}  // namespace meshfit
