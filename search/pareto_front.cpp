#include "search/pareto_front.hpp"

#include <algorithm>
#include <cstdint>

#include "search/strategy_key.hpp"

namespace meshfit {

bool score_less(const ScoredStrategy& a, const ScoredStrategy& b) {
  if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
  if (a.mem != b.mem) return a.mem < b.mem;
  return key_less(a.strategy, b.strategy);
}

bool dominates(const ScoredStrategy& x, const ScoredStrategy& y) {
  return x.mem <= y.mem && x.time_ns <= y.time_ns && (x.mem < y.mem || x.time_ns < y.time_ns);
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

void NonDominatedSet::add(const ScoredStrategy& x) {
  for (const auto& y : points_) {
    if (dominates(y, x)) return;
  }
  points_.erase(
      std::remove_if(points_.begin(), points_.end(), [&](const ScoredStrategy& y) { return dominates(x, y); }),
      points_.end());
  points_.push_back(x);
}

}  // namespace meshfit
