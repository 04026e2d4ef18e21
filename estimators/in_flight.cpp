#include "estimators/in_flight.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

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

// Which states can hold the first maximum, for every A > 0. During warm-up (j < n_wu) counts only
// rise, each state the previous plus one, so each warm-up state lies below the next; the first
// steady state (j = n_wu) is the last warm-up state plus one. With no steady state the last
// warm-up state alone is left. Every steady state holds n_wu + 1 micro-batches, and from one to
// the next one chunk gains one and another loses one, so the totals of consecutive states change
// by A(gain) − A(loss): along a stretch where that pair of chunks stays the same the totals form
// an arithmetic progression, whose first maximum (exact arithmetic) is its first or last state.
// So the states kept are the ends of those stretches, distinct, in order of first appearance.
InterleavedStates peak_candidates(std::int64_t pp, std::int64_t v, std::int64_t n_wu, std::int64_t steady) {
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
  InterleavedStates set;
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

// `counts` (n(i,c) at the peak) is left alone when null.
// `states`: stage i's candidate states, made here when null.
double interleaved(std::vector<std::int64_t>* counts, const Strategy& s, std::int64_t i, const std::vector<double>& A,
                   const InterleavedStates* states) {
  const std::int64_t pp = s.pp, v = s.vpp, m = s.num_microbatches;
  const std::int64_t n_fw = m * v;
  const std::int64_t n_wu = std::min(2 * (pp - i - 1) + (v - 1) * pp, n_fw);
  const std::int64_t steady = std::min(n_fw - n_wu, pp * v);
  const auto width = static_cast<std::size_t>(v);
  InterleavedStates made;
  if (!states) {
    made = peak_candidates(pp, v, n_wu, steady);
    states = &made;
  }
  // Whole positive byte counts whose every sum Σ n·A stays below 2^53 are added exactly by
  // doubles, in any order: the candidate states then hold the first maximum (peak_candidates),
  // and each state's total is the previous one's plus its few changes, in integers, equal bit
  // for bit to the sum over the chunks that the timeline below makes.
  const InterleavedStates& set = *states;
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
    for (const InterleavedStates::Change& change : set.changes) {
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

// n(i,c) of the schedules whose counts are a closed form (all but interleaved 1F1B with pp > 1).
std::int64_t closed_form_count(const Strategy& s, std::int64_t i, std::size_t c) {
  if (s.pp == 1) return 1;  // §8.5: gradient accumulation runs micro-batches one after another
  switch (s.schedule) {
    case Schedule::gpipe: return s.num_microbatches;                 // §8.2
    case Schedule::dualpipev: return c == 0 ? 2 * s.pp - 1 - i : i;  // §8.4, SAPP-ND's counts
    default: return std::min(s.pp - i, s.num_microbatches);          // §8.1: 1F1B and ZB-H1
  }
}

bool interleaved_schedule(const Strategy& s) { return s.pp > 1 && s.schedule == Schedule::interleaved_1f1b; }

}  // namespace

std::int64_t interleaved_states_m(std::int64_t pp, std::int64_t v, std::int64_t m) {
  const std::int64_t saturated = 2 * (pp - 1) + (v - 1) * pp + pp * v;
  return m * v >= saturated ? 0 : m;
}

std::vector<InterleavedStates> interleaved_states(std::int64_t pp, std::int64_t v, std::int64_t m) {
  const std::int64_t saturated = 2 * (pp - 1) + (v - 1) * pp + pp * v;
  const std::int64_t n_fw = std::min(m * v, saturated);
  std::vector<InterleavedStates> stages;
  for (std::int64_t stage = 0; stage < pp; ++stage) {
    const std::int64_t n_wu = std::min(2 * (pp - stage - 1) + (v - 1) * pp, n_fw);
    stages.push_back(peak_candidates(pp, v, n_wu, std::min(n_fw - n_wu, pp * v)));
  }
  return stages;
}

double in_flight_into(std::vector<std::int64_t>& counts, const Strategy& s, std::int64_t i,
                      const std::vector<double>& A, const InterleavedStates* states) {
  if (interleaved_schedule(s)) return interleaved(&counts, s, i, A, states);
  counts.resize(A.size());
  double peak = 0;
  for (std::size_t c = 0; c < A.size(); ++c) {
    counts[c] = closed_form_count(s, i, c);
    peak += static_cast<double>(counts[c]) * A[c];
  }
  return peak;
}

double in_flight_peak(const Strategy& s, std::int64_t i, const std::vector<double>& A,
                      const InterleavedStates* states) {
  if (interleaved_schedule(s)) return interleaved(nullptr, s, i, A, states);
  // The same sum as in_flight_into's, without keeping the counts.
  double peak = 0;
  for (std::size_t c = 0; c < A.size(); ++c) peak += static_cast<double>(closed_form_count(s, i, c)) * A[c];
  return peak;
}

InFlight in_flight(const Strategy& s, std::int64_t i, const std::vector<double>& A) {
  InFlight r;
  r.peak = in_flight_into(r.counts, s, i, A);
  return r;
}

}  // namespace meshfit
