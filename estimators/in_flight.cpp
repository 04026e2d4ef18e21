#include "estimators/in_flight.hpp"

#include <algorithm>
#include <array>
#include <map>

namespace meshfit {

namespace {

// §8.3: Megatron's interleaved 1F1B order on stage i, simulated over warm-up and one steady
// period. After warm-up both the forward and the backward chunk sequences repeat every pp·v
// steps and each chunk gains and loses pp micro-batches per period (m mod pp = 0, rule H23), so
// the counts repeat too: one period of the steady state holds every value the timeline takes.
// Calls `state(counts)` after every forward, in timeline order (the peak is checked there).
template <class State>
void interleaved_timeline(std::int64_t pp, std::int64_t v, std::int64_t n_wu, std::int64_t steady, State&& state) {
  const std::int64_t period = pp * v;
  std::vector<std::int64_t> count(static_cast<std::size_t>(v), 0);
  for (std::int64_t j = 0; j < n_wu + steady; ++j) {
    ++count[static_cast<std::size_t>((j % period) / pp)];
    state(count);
    if (j >= n_wu) --count[static_cast<std::size_t>(v - 1 - ((j - n_wu) % period) / pp)];
  }
}

// The count vectors of a timeline that no other state of it dominates (≥ in every chunk, > in
// one), in order of first appearance. With every A(i,c) > 0 a dominated state is strictly below
// the one dominating it, so the first maximum of Σ n·A over these is the timeline's first
// maximum. They depend only on (pp, v, i, n_wu, steady): kept per thread, computed once.
const std::vector<std::vector<std::int64_t>>& undominated_states(std::int64_t pp, std::int64_t v, std::int64_t n_wu,
                                                                 std::int64_t steady) {
  using Key = std::array<std::int64_t, 4>;
  thread_local std::map<Key, std::vector<std::vector<std::int64_t>>> cache;
  const Key key{pp, v, n_wu, steady};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::vector<std::vector<std::int64_t>> all;
  interleaved_timeline(pp, v, n_wu, steady, [&](const std::vector<std::int64_t>& c) {
    if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
  });
  auto dominated_by = [](const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& y) {
    bool strictly = false;
    for (std::size_t c = 0; c < x.size(); ++c) {
      if (y[c] < x[c]) return false;
      strictly |= y[c] > x[c];
    }
    return strictly;
  };
  std::vector<std::vector<std::int64_t>> kept;
  for (const auto& x : all) {
    if (std::none_of(all.begin(), all.end(), [&](const auto& y) { return dominated_by(x, y); })) kept.push_back(x);
  }
  return cache.emplace(key, std::move(kept)).first->second;
}

double interleaved(std::vector<std::int64_t>& counts, const Strategy& s, std::int64_t i, const std::vector<double>& A) {
  const std::int64_t pp = s.pp, v = s.vpp, m = s.num_microbatches;
  const std::int64_t n_fw = m * v;
  const std::int64_t n_wu = std::min(2 * (pp - i - 1) + (v - 1) * pp, n_fw);
  const std::int64_t steady = std::min(n_fw - n_wu, pp * v);
  double peak = -1;
  auto total = [&](const std::vector<std::int64_t>& count) {
    double t = 0;
    for (std::size_t c = 0; c < count.size(); ++c) t += static_cast<double>(count[c]) * A[c];
    return t;
  };
  if (std::all_of(A.begin(), A.end(), [](double a) { return a > 0; })) {
    const std::vector<std::int64_t>* best = nullptr;
    for (const auto& count : undominated_states(pp, v, n_wu, steady)) {
      const double t = total(count);
      if (t > peak) {  // strictly greater: the first time a peak is reached (ruling 1)
        peak = t;
        best = &count;
      }
    }
    counts.assign(best->begin(), best->end());
  } else {
    interleaved_timeline(pp, v, n_wu, steady, [&](const std::vector<std::int64_t>& count) {
      const double t = total(count);
      if (t > peak) {
        peak = t;
        counts.assign(count.begin(), count.end());
      }
    });
  }
  return peak;
}

}  // namespace

double in_flight_into(std::vector<std::int64_t>& counts, const Strategy& s, std::int64_t i,
                      const std::vector<double>& A) {
  const std::int64_t m = s.num_microbatches;
  if (s.pp == 1) {  // §8.5: gradient accumulation runs micro-batches one after another
    counts.assign(A.size(), 1);
  } else {
    switch (s.schedule) {
      case Schedule::interleaved_1f1b: return interleaved(counts, s, i, A);
      case Schedule::gpipe: counts.assign(A.size(), m); break;  // §8.2
      case Schedule::dualpipev:  // §8.4, SAPP-ND's counts
        counts.assign({2 * s.pp - 1 - i, i});
        break;
      default:  // §8.1: 1F1B and ZB-H1
        counts.assign(A.size(), std::min(s.pp - i, m));
    }
  }
  double peak = 0;
  for (std::size_t c = 0; c < A.size(); ++c) peak += static_cast<double>(counts[c]) * A[c];
  return peak;
}

InFlight in_flight(const Strategy& s, std::int64_t i, const std::vector<double>& A) {
  InFlight r;
  r.peak = in_flight_into(r.counts, s, i, A);
  return r;
}

}  // namespace meshfit
