// In-flight micro-batches (memory-model.md §8), against the spec's closed forms and a direct
// transcription of §8.3's interleaved order.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "estimators/in_flight.hpp"

using namespace meshfit;

namespace {

// §8.3 steps 1–5 literally, over the whole timeline; `at_peak` gets the counts the first time
// the peak is reached.
double reference_interleaved(std::int64_t pp, std::int64_t v, std::int64_t m, std::int64_t i,
                             const std::vector<double>& A, std::vector<std::int64_t>* at_peak = nullptr) {
  const std::int64_t n_fw = m * v;
  const std::int64_t n_wu = std::min(2 * (pp - i - 1) + (v - 1) * pp, n_fw);
  std::vector<std::int64_t> count(static_cast<std::size_t>(v), 0);
  double peak = 0;
  auto fwd = [&](std::int64_t j) {
    ++count[static_cast<std::size_t>((j % (pp * v)) / pp)];
    double t = 0;
    for (std::int64_t c = 0; c < v; ++c)
      t += static_cast<double>(count[static_cast<std::size_t>(c)]) * A[static_cast<std::size_t>(c)];
    if (t > peak) {
      peak = t;
      if (at_peak) *at_peak = count;
    }
  };
  auto bwd = [&](std::int64_t j) { --count[static_cast<std::size_t>(v - 1 - (j % (pp * v)) / pp)]; };
  for (std::int64_t j = 0; j < n_wu; ++j) fwd(j);
  for (std::int64_t j = 0; j < n_fw - n_wu; ++j) {
    fwd(n_wu + j);
    bwd(j);
  }
  for (std::int64_t j = n_fw - n_wu; j < n_fw; ++j) bwd(j);
  return peak;
}

}  // namespace

TEST_CASE("1F1B, GPipe, DualPipeV and pp = 1 counts (§8.1, §8.2, §8.4, §8.5)") {
  Strategy s;
  s.pp = 4;
  s.schedule = Schedule::one_f_one_b;
  s.num_microbatches = 2;
  CHECK(in_flight(s, 1, {1.0}).counts[0] == 2);  // min(pp − i, m): SAPP-ND would say 1
  s.num_microbatches = 8;
  CHECK(in_flight(s, 0, {1.0}).counts[0] == 4);
  s.schedule = Schedule::gpipe;
  CHECK(in_flight(s, 3, {1.0}).counts[0] == 8);
  s.schedule = Schedule::dualpipev;
  s.vpp = 2;
  CHECK(in_flight(s, 1, {1.0, 1.0}).counts == std::vector<std::int64_t>{6, 1});
  Strategy one;
  CHECK(in_flight(one, 0, {5.0}).peak == 5.0);
}

TEST_CASE("interleaved 1F1B: the bounded simulation equals the full timeline") {
  for (std::int64_t pp : {2, 3, 4, 8}) {
    for (std::int64_t v : {2, 3, 5, 7}) {
      // k = 12: m·v beyond warm-up plus a steady period, where every m shares the states.
      for (std::int64_t k : {1, 2, 3, 5, 12}) {
        const std::int64_t m = pp * k;  // rule H23
        for (std::int64_t i = 0; i < pp; ++i) {
          std::vector<double> A;
          for (std::int64_t c = 0; c < v; ++c) A.push_back(100.0 + static_cast<double>((c * 37 + i * 11) % 17));
          std::vector<double> with_empty_chunk = A;  // a chunk that keeps nothing: the plain simulation
          with_empty_chunk[static_cast<std::size_t>(v - 1)] = 0;
          Strategy s;
          s.pp = pp;
          s.vpp = v;
          s.schedule = Schedule::interleaved_1f1b;
          s.num_microbatches = m;
          CAPTURE(pp);
          CAPTURE(v);
          CAPTURE(m);
          CAPTURE(i);
          std::vector<std::int64_t> counts;
          CHECK(in_flight(s, i, A).peak == reference_interleaved(pp, v, m, i, A, &counts));
          CHECK(in_flight(s, i, A).counts == counts);
          // Chunks of two sizes in turn: ties between states of different stretches.
          std::vector<double> two_sizes;
          for (std::int64_t c = 0; c < v; ++c) two_sizes.push_back(c % 2 == 0 ? 5.0 : 7.0);
          CHECK(in_flight(s, i, two_sizes).peak == reference_interleaved(pp, v, m, i, two_sizes, &counts));
          CHECK(in_flight(s, i, two_sizes).counts == counts);
          // Equal chunks: every steady state ties, and the first is the one reported (ruling 1).
          const std::vector<double> equal(static_cast<std::size_t>(v), 3.0);
          CHECK(in_flight(s, i, equal).peak == reference_interleaved(pp, v, m, i, equal, &counts));
          CHECK(in_flight(s, i, equal).counts == counts);
          CHECK(in_flight(s, i, with_empty_chunk).peak == reference_interleaved(pp, v, m, i, with_empty_chunk));
          // Fractional byte counts, and whole ones near the top of exact double sums.
          // Whole sizes past 2^53 / (n_wu + 1), whose sums a double rounds: the chunk-order sums.
          std::vector<double> fractional, huge, beyond_exact;
          for (std::int64_t c = 0; c < v; ++c) {
            fractional.push_back(A[static_cast<std::size_t>(c)] + 0.1 * static_cast<double>(c % 3));
            // 2^46: the longest timelines here (n_wu + 1 = 63) still sum below 2^53.
            huge.push_back(0x1p46 + static_cast<double>((c * 5 + i) % 7));
            beyond_exact.push_back(0x1p51 + static_cast<double>((c * 3 + i) % 5));
          }
          CHECK(in_flight(s, i, beyond_exact).peak == reference_interleaved(pp, v, m, i, beyond_exact, &counts));
          CHECK(in_flight(s, i, beyond_exact).counts == counts);
          CHECK(in_flight(s, i, fractional).peak == reference_interleaved(pp, v, m, i, fractional, &counts));
          CHECK(in_flight(s, i, fractional).counts == counts);
          CHECK(in_flight(s, i, huge).peak == reference_interleaved(pp, v, m, i, huge, &counts));
          CHECK(in_flight(s, i, huge).counts == counts);
        }
      }
    }
  }
}

TEST_CASE("interleaved 1F1B with equal chunks holds n_wu + 1 chunk-micro-batches (§8.3)") {
  // Stage 0 of pp 4, v 2, m 8: 2·3 + 4 + 1 = 11 = pp·v·(1 + (pp − 1)/(pp·v)).
  Strategy s;
  s.pp = 4;
  s.vpp = 2;
  s.schedule = Schedule::interleaved_1f1b;
  s.num_microbatches = 8;
  CHECK(in_flight(s, 0, {1.0, 1.0}).peak == 11.0);
}
