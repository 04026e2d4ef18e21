#include "estimators/in_flight.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
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

// The count vectors of a timeline that can hold its first maximum of Σ n·A for any A with every
// A(i,c) > 0, summed exactly (peak_candidates), in order of first appearance, in one row-major
// block (states × v): the first maximum over these is the timeline's.
struct StateSet {
  std::vector<std::int64_t> counts;
  std::size_t states = 0;
  // States 1, 2, … as their changes from the state before, in order: per chunk that changes,
  // by how much, and on a state's last change, the state's index (0 on the others; the states are
  // distinct, so each has at least one change). Consecutive states are stretch ends: a change
  // touches a few chunks, not all v.
  struct Change {
    std::uint32_t chunk;
    std::int32_t by;
    std::uint32_t completes;
  };
  std::vector<Change> changes;
  std::int64_t most_held = 0;  // the largest Σ_c n(c) over the states
};

// Which states can hold the first maximum, for every A > 0. During warm-up (j < n_wu) counts only
// rise, each state the previous plus one, so each warm-up state lies below the next; the first
// steady state (j = n_wu) is the last warm-up state plus one. With no steady state the last
// warm-up state alone is left. Every steady state holds n_wu + 1 micro-batches, and from one to
// the next one chunk gains one and another loses one, so the totals of consecutive states change
// by A(gain) − A(loss): along a stretch where that pair of chunks stays the same the totals form
// an arithmetic progression, whose first maximum (exact arithmetic) is its first or last state.
// So the states kept are the ends of those stretches, distinct, in order of first appearance.
StateSet peak_candidates(std::int64_t pp, std::int64_t v, std::int64_t n_wu, std::int64_t steady) {
  const auto width = static_cast<std::size_t>(v);
  std::vector<std::int64_t> states;  // the steady states in timeline order (or the last warm-up one)
  std::int64_t j = 0;
  interleaved_timeline(pp, v, n_wu, steady, [&](const std::vector<std::int64_t>& c) {
    if (steady > 0 ? j >= n_wu : j == n_wu - 1) states.insert(states.end(), c.begin(), c.end());
    ++j;
  });
  const std::size_t count = states.size() / std::max<std::size_t>(width, 1);
  auto state = [&](std::size_t k) { return states.begin() + static_cast<std::ptrdiff_t>(k * width); };
  // True when the step into state k changes the same chunks by the same amounts as the step out.
  auto inner = [&](std::size_t k) {
    if (k == 0 || k + 1 >= count) return false;
    for (std::size_t c = 0; c < width; ++c) {
      if (state(k)[c] - state(k - 1)[c] != state(k + 1)[c] - state(k)[c]) return false;
    }
    return true;
  };
  StateSet set;
  for (std::size_t k = 0; k < count; ++k) {
    if (inner(k)) continue;
    bool seen = false;
    for (std::size_t e = 0; e < set.states && !seen; ++e) {
      seen = std::equal(state(k), state(k) + static_cast<std::ptrdiff_t>(width),
                        set.counts.begin() + static_cast<std::ptrdiff_t>(e * width));
    }
    if (seen) continue;
    set.counts.insert(set.counts.end(), state(k), state(k) + static_cast<std::ptrdiff_t>(width));
    ++set.states;
  }
  for (std::size_t k = 0; k < set.states; ++k) {
    std::int64_t held = 0;
    for (std::size_t c = 0; c < width; ++c) {
      held += set.counts[k * width + c];
      if (k == 0) continue;
      const std::int64_t change = set.counts[k * width + c] - set.counts[(k - 1) * width + c];
      if (change != 0) {
        set.changes.push_back({static_cast<std::uint32_t>(c), static_cast<std::int32_t>(change), 0});
      }
    }
    if (k > 0) set.changes.back().completes = static_cast<std::uint32_t>(k);
    set.most_held = std::max(set.most_held, held);
  }
  return set;
}

// The states of every stage for (pp, v, m), which fix each stage's warm-up and steady length;
// kept per thread, computed once. Consecutive calls (the stages of one estimate, and estimates
// that share pp, v and m) find them without a lookup. m enters only through n_fw = m·v, clamped
// by the warm-up (at most 2(pp−1) + (v−1)·pp, stage 0's) and by one steady period (pp·v): from
// n_fw = that sum on, every stage's states are the same, so all such m share one entry (key 0).
const StateSet& candidate_states(std::int64_t pp, std::int64_t v, std::int64_t m, std::int64_t i) {
  using Key = std::array<std::int64_t, 3>;
  thread_local std::map<Key, std::vector<StateSet>> cache;
  thread_local Key last_key{-1, -1, -1};
  thread_local const std::vector<StateSet>* last = nullptr;
  const std::int64_t saturated = 2 * (pp - 1) + (v - 1) * pp + pp * v;
  const bool beyond = m * v >= saturated;
  const Key key{pp, v, beyond ? 0 : m};
  if (key != last_key) {
    auto it = cache.find(key);
    if (it == cache.end()) {
      std::vector<StateSet> stages;
      const std::int64_t n_fw = beyond ? saturated : m * v;
      for (std::int64_t stage = 0; stage < pp; ++stage) {
        const std::int64_t n_wu = std::min(2 * (pp - stage - 1) + (v - 1) * pp, n_fw);
        stages.push_back(peak_candidates(pp, v, n_wu, std::min(n_fw - n_wu, pp * v)));
      }
      it = cache.emplace(key, std::move(stages)).first;
    }
    last_key = key;
    last = &it->second;
  }
  return (*last)[static_cast<std::size_t>(i)];
}

// `counts` (n(i,c) at the peak) is left alone when null.
double interleaved(std::vector<std::int64_t>* counts, const Strategy& s, std::int64_t i, const std::vector<double>& A) {
  const std::int64_t pp = s.pp, v = s.vpp, m = s.num_microbatches;
  const std::int64_t n_fw = m * v;
  const std::int64_t n_wu = std::min(2 * (pp - i - 1) + (v - 1) * pp, n_fw);
  const std::int64_t steady = std::min(n_fw - n_wu, pp * v);
  const auto width = static_cast<std::size_t>(v);
  // Whole positive byte counts whose every sum Σ n·A stays below 2^53 are added exactly by
  // doubles, in any order: the candidate states then hold the first maximum (peak_candidates),
  // and each state's total is the previous one's plus its few changes, in integers, equal bit
  // for bit to the sum over the chunks that the timeline below makes.
  const StateSet& set = candidate_states(pp, v, m, i);
  constexpr double kExact = 9007199254740992.0;  // 2^53
  const double limit = kExact / static_cast<double>(std::max<std::int64_t>(set.most_held, 1));
  bool whole = true;
  std::int64_t exact = 0;  // the first state's total
  for (std::size_t c = 0; c < width; ++c) {
    const double a = A[c];
    const bool in_range = a > 0 && a < limit;
    const auto a_int = static_cast<std::int64_t>(in_range ? a : 0.0);  // no cast out of range
    whole &= in_range & (static_cast<double>(a_int) == a);
    exact += set.counts[c] * a_int;
  }
  if (whole) {
    std::size_t best = 0;
    std::int64_t top = exact;
    for (const StateSet::Change& change : set.changes) {
      exact += change.by * static_cast<std::int64_t>(A[change.chunk]);
      // Strictly greater: the first time a peak is reached (ruling 1).
      if (change.completes != 0 && exact > top) {
        top = exact;
        best = change.completes;
      }
    }
    if (counts) {
      counts->assign(set.counts.begin() + static_cast<std::ptrdiff_t>(best * width),
                     set.counts.begin() + static_cast<std::ptrdiff_t>((best + 1) * width));
    }
    return static_cast<double>(top);
  }
  // Otherwise (fractional sizes, sizes past exact sums, an empty chunk) every state of the
  // timeline, each summed over the chunks in order: the spec's order literally.
  double peak = -1;
  interleaved_timeline(pp, v, n_wu, steady, [&](const std::vector<std::int64_t>& count) {
    double t = 0;
    for (std::size_t c = 0; c < count.size(); ++c) t += static_cast<double>(count[c]) * A[c];
    if (t > peak) {
      peak = t;
      if (counts) counts->assign(count.begin(), count.end());
    }
  });
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
      case Schedule::interleaved_1f1b: return interleaved(&counts, s, i, A);
      case Schedule::gpipe: counts.assign(A.size(), m); break;  // §8.2
      case Schedule::dualpipev:                                 // §8.4, SAPP-ND's counts
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

double in_flight_peak(const Strategy& s, std::int64_t i, const std::vector<double>& A) {
  if (s.pp > 1 && s.schedule == Schedule::interleaved_1f1b) return interleaved(nullptr, s, i, A);
  // The other schedules' counts are a closed form: the same sum as in_flight_into, without them.
  thread_local std::vector<std::int64_t> counts;
  return in_flight_into(counts, s, i, A);
}

InFlight in_flight(const Strategy& s, std::int64_t i, const std::vector<double>& A) {
  InFlight r;
  r.peak = in_flight_into(r.counts, s, i, A);
  return r;
}

}  // namespace meshfit
