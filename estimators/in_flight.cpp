#include "estimators/in_flight.hpp"

#include <algorithm>

namespace meshfit {

namespace {

// §8.3: Megatron's interleaved 1F1B order on stage i, simulated; O(m·v).
InFlight interleaved(const Strategy& s, std::int64_t i, const std::vector<double>& A) {
  const std::int64_t pp = s.pp, v = s.vpp, m = s.num_microbatches;
  const std::int64_t n_fw = m * v;
  const std::int64_t n_wu = std::min(2 * (pp - i - 1) + (v - 1) * pp, n_fw);
  std::vector<std::int64_t> count(static_cast<std::size_t>(v), 0);
  InFlight r;
  r.counts = count;
  r.peak = -1;
  auto forward = [&](std::int64_t j) {
    ++count[static_cast<std::size_t>((j % (pp * v)) / pp)];
    double total = 0;
    for (std::size_t c = 0; c < count.size(); ++c) total += static_cast<double>(count[c]) * A[c];
    if (total > r.peak) {  // strictly greater: the first time a peak is reached (ruling 1)
      r.peak = total;
      r.counts = count;
    }
  };
  auto backward = [&](std::int64_t j) { --count[static_cast<std::size_t>(v - 1 - (j % (pp * v)) / pp)]; };
  for (std::int64_t j = 0; j < n_wu; ++j) forward(j);
  // After warm-up both the forward and the backward chunk sequences repeat every pp·v steps and
  // each chunk gains and loses pp micro-batches per period (m mod pp = 0, rule H23), so the
  // counts repeat too: one period of the steady state holds every value the timeline takes.
  const std::int64_t steady = std::min(n_fw - n_wu, pp * v);
  for (std::int64_t j = 0; j < steady; ++j) {
    forward(n_wu + j);
    backward(j);
  }
  return r;
}

}  // namespace

InFlight in_flight(const Strategy& s, std::int64_t i, const std::vector<double>& A) {
  InFlight r;
  const std::int64_t m = s.num_microbatches;
  if (s.pp == 1) {  // §8.5: gradient accumulation runs micro-batches one after another
    r.counts.assign(A.size(), 1);
  } else {
    switch (s.schedule) {
      case Schedule::interleaved_1f1b: return interleaved(s, i, A);
      case Schedule::gpipe: r.counts.assign(A.size(), m); break;  // §8.2
      case Schedule::dualpipev:  // §8.4, SAPP-ND's counts
        r.counts = {2 * s.pp - 1 - i, i};
        break;
      default:  // §8.1: 1F1B and ZB-H1
        r.counts.assign(A.size(), std::min(s.pp - i, m));
    }
  }
  for (std::size_t c = 0; c < A.size(); ++c) r.peak += static_cast<double>(r.counts[c]) * A[c];
  return r;
}

}  // namespace meshfit
