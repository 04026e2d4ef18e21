// The search: the space's candidates (search_space.hpp) walked triple by triple in parallel
// (oneTBB), the valid ones scored by the evaluator (strategy_scorer.hpp), the fitting ones reduced
// to the Pareto front (pareto_front.hpp) and the top-k (docs/spec/search-and-time.md §6). Memory
// stays bounded by the front and k.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "search/fit_cloud.hpp"
#include "search/pareto_front.hpp"
#include "search/pruning_passes.hpp"
#include "search/scored_strategy.hpp"
#include "search/search_space.hpp"

namespace meshfit {

class SearchWorkspace;

struct SearchResult {
  double budget = 0;
  std::vector<ScoredStrategy> front;  // sorted by (time, mem, key)
  std::vector<ScoredStrategy> top;    // the k fastest fitting, (time, mem, key)
  std::int64_t enumerated = 0, valid = 0, fitting = 0, estimated = 0;
  std::array<std::int64_t, kRuleSlots> histogram{};
  std::optional<ScoredStrategy> closest;  // smallest peak among valid strategies (when none fits)
  double seconds = 0;
  bool interrupted = false;
  FitCloud cloud;  // every fitting strategy's cell, when SearchOptions::collect_cloud
};

struct SearchOptions {
  std::size_t top_k = 10;
  // The provable skips (pruning_passes.hpp), each of which leaves the output that of the plain
  // search: all on, or some switched off to check that.
  PruningPasses passes = PruningPasses::all();
  double headroom_bytes = 0;
  bool collect_cloud = false;  // fill SearchResult::cloud (for --plot and --report)
  // Only the top-k is wanted (meshfit check): no front, and a strategy whose step-time floor
  // (step_time_evaluator.hpp) is above the k-th fastest found so far is not estimated, so `fitting` counts
  // only the fitting strategies estimated. With top_k = 1 the fastest found by any thread bounds.
  bool best_only = false;
  bool dedupe_ties = false;  // §6.3's option: one strategy per exact (memory, time) tie on the front
  // Reuse the evaluator's sides across strategies (zero_free_memo.hpp, the memory evaluator's
  // StaticSide and KindCache); off only to check that reuse changes nothing.
  bool reuse = true;
  const std::atomic<bool>* stop = nullptr;                 // set by a signal handler: finish early, marked
  SearchWorkspace* workspace = nullptr;                    // storage kept across searches (search_workspace.hpp)
  std::function<void(std::size_t, std::size_t)> progress;  // (triples done, triples) from any thread
};

SearchResult run_search(const SearchSpace& space, const SearchOptions& options);

}  // namespace meshfit
