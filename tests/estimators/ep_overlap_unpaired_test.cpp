// What Megatron-Core's combined 1F1B leaves without a partner (pipeline_schedule.hpp,
// ep_overlap_unpaired): hand-counted from combined_1f1b.py and schedules.py.
#include <doctest/doctest.h>

#include <vector>

#include "estimators/pipeline_schedule.hpp"

using namespace meshfit;

namespace {

std::vector<StageTime> stages_hiding(const std::vector<double>& hidden) {
  std::vector<StageTime> st(hidden.size());
  for (std::size_t i = 0; i < hidden.size(); ++i) st[i].ep_hidden = hidden[i];
  return st;
}

Strategy schedule(std::int64_t pp, std::int64_t vpp, std::int64_t microbatches, Schedule kind) {
  Strategy s;
  s.pp = pp;
  s.vpp = vpp;
  s.num_microbatches = microbatches;
  s.schedule = kind;
  return s;
}

}  // namespace

TEST_CASE("EP overlap without PP: the first forward and the last backward run alone") {
  // combined_1f1b_schedule_for_no_pipelining: phase 0 the first micro-batch's forward alone, the
  // last phase the last one's backward alone: one micro-batch's worth of hidden EP time, whatever m.
  CHECK(ep_overlap_unpaired(schedule(1, 1, 5, Schedule::one_f_one_b), stages_hiding({0.25})) == 0.25);
  CHECK(ep_overlap_unpaired(schedule(1, 1, 64, Schedule::one_f_one_b), stages_hiding({0.25})) == 0.25);
  // One micro-batch: nothing to pair with, all of it exposed (once).
  CHECK(ep_overlap_unpaired(schedule(1, 1, 1, Schedule::one_f_one_b), stages_hiding({0.25})) == 0.25);
}

TEST_CASE("EP overlap with interleaved PP: each rank's warm-up and cool-down chunks run alone") {
  // pp 4, v 2, m 8: W_i = 2·(3 − i) + 1·4 + 1 = 11, 9, 7, 5 chunk forwards (and backwards), over
  // v = 2 chunks a micro-batch: 5.5, 4.5, 3.5, 2.5 micro-batches' worth.
  const Strategy s = schedule(4, 2, 8, Schedule::interleaved_1f1b);
  CHECK(ep_overlap_unpaired(s, stages_hiding({1, 1, 1, 1})) == doctest::Approx(5.5));
  // The rank with the most sets it: stage 3 hiding 3 s gives 2.5 · 3 = 7.5 > 5.5.
  CHECK(ep_overlap_unpaired(s, stages_hiding({1, 1, 1, 3})) == doctest::Approx(7.5));
  // m 2: 4 chunks in all, so every one of stage 0's runs in warm-up (W capped at m·v = 4): 2
  // micro-batches' worth, all there is.
  CHECK(ep_overlap_unpaired(schedule(4, 2, 2, Schedule::interleaved_1f1b), stages_hiding({1, 1, 1, 1})) ==
        doctest::Approx(2.0));
}

TEST_CASE("EP overlap with plain 1F1B: the usual pp − i − 1 warm-up forwards and the overlap's one") {
  // pp 4, m 8: W_i = 4, 3, 2, 1.
  const Strategy s = schedule(4, 1, 8, Schedule::one_f_one_b);
  CHECK(ep_overlap_unpaired(s, stages_hiding({0.5, 0.5, 0.5, 0.5})) == doctest::Approx(2.0));
  CHECK(ep_overlap_unpaired(s, stages_hiding({0, 0, 0, 3})) == doctest::Approx(3.0));
}
