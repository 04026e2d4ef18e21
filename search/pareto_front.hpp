// The front of a search: the fitting strategies no other beats on both memory and step time
// (docs/spec/search-and-time.md §6.3), and the orders the output lists them in.
#pragma once

#include <vector>

#include "search/scored_strategy.hpp"

namespace meshfit {

// (time, mem, key): the order of the top-k and of the printed front.
bool score_less(const ScoredStrategy& a, const ScoredStrategy& b);
// x is at most as large and as slow as y, and smaller or faster.
bool dominates(const ScoredStrategy& x, const ScoredStrategy& y);

// §6.3's sweep over fitting strategies: the non-dominated ones, exact ties kept (all of them in
// key order, or with `dedupe_ties` only the first), sorted by score_less.
std::vector<ScoredStrategy> pareto_front(std::vector<ScoredStrategy> fitting, bool dedupe_ties = false);

// The non-dominated points of what has been added so far, in no order: what one search task keeps
// (bounded by the front's size), merged across tasks; pareto_front makes the final front of it.
class NonDominatedSet {
 public:
  void add(const ScoredStrategy& x);
  const std::vector<ScoredStrategy>& points() const { return points_; }

 private:
  std::vector<ScoredStrategy> points_;
};

}  // namespace meshfit
