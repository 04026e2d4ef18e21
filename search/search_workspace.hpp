// Storage for running searches, owned by the caller and passed in (SearchOptions::workspace): each
// thread's scoring state (strategy_scorer.hpp). A caller that runs many searches — meshfit check,
// a --devices list, the benchmark — keeps one across them, so that what no model changes (the
// interleaved schedule's candidate states, the rule plans of a space's settings, the tables'
// storage) is made once, not once per search. run_search makes its own when given none.
#pragma once

#include <atomic>
#include <cstdint>

#include <tbb/enumerable_thread_specific.h>

#include "search/strategy_scorer.hpp"

namespace meshfit {

class SearchWorkspace {
 public:
  // The calling thread's state.
  ScoringState& local() { return states_.local(); }
  // A token for one search: the evaluator's reuse within a state is keyed on it, so a state never
  // serves one search with another's figures. This workspace's own count, never 0.
  std::uint64_t next_context() { return ++searches_; }

 private:
  tbb::enumerable_thread_specific<ScoringState> states_;
  std::atomic<std::uint64_t> searches_{0};
};

}  // namespace meshfit
