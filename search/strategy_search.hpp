// The search: every candidate of the space checked against the rules, the valid ones scored with
// the memory and step-time models in parallel (oneTBB), the fitting ones reduced to the Pareto
// front and the top-k (docs/spec/search-and-time.md §6). Memory stays bounded by the front and k.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "search/fit_cloud.hpp"
#include "search/search_space.hpp"

namespace meshfit {

struct ScoredStrategy {
  Strategy strategy;
  std::int64_t mem = 0;      // ⌈M_peak⌉ in bytes (§6.3)
  std::int64_t time_ns = 0;  // llround(T·10^9)
  double peak_bytes = 0;
  std::int64_t peak_stage = 0;
  double step_s = 0, tokens_per_sec_per_device = 0, mfu = 0;
  bool dominated = false;  // in top-k: not on the front
};

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
  // Provable skips (the output is that of the plain search): a micro-batch run's fitting prefix
  // found by bisection (its peak is non-decreasing in b), fitting strategies that floors show
  // dominated and out of the top-k counted without estimates, ZeRO settings whose model states
  // alone overflow skipped.
  bool prune = true;
  double headroom_bytes = 0;
  bool collect_cloud = false;  // fill SearchResult::cloud (for --plot and --report)
  // Only the top-k is wanted (meshfit check): no front, and a strategy whose step-time floor
  // (step_time.hpp) is above the k-th fastest found so far is not estimated, so `fitting` counts
  // only the fitting strategies estimated. With top_k = 1 the fastest found by any thread bounds.
  bool best_only = false;
  bool dedupe_ties = false;
  // Reuse the estimators' per-thread sides across strategies (zero_free_memo.hpp, the memory
  // model's StaticSide and KindCache); off only to check that reuse changes nothing.
  bool reuse = true;                        // §6.3's option: one strategy per exact (memory, time) tie on the front
  const std::atomic<bool>* stop = nullptr;  // set by a signal handler: finish early, marked
  std::function<void(std::size_t, std::size_t)> progress;  // (triples done, triples) from any thread
};

bool score_less(const ScoredStrategy& a, const ScoredStrategy& b);  // (time, mem, key)
// §6.3's sweep over fitting strategies: the non-dominated ones, exact ties kept (all of them in
// key order, or with `dedupe_ties` only the first).
std::vector<ScoredStrategy> pareto_front(std::vector<ScoredStrategy> fitting, bool dedupe_ties = false);

SearchResult run_search(const SearchSpace& space, const SearchOptions& options);

}  // namespace meshfit
