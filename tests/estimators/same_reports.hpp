// Two estimates of one strategy made two ways (reused or fresh, copied twins or walked) must
// agree in every reported figure, bit for bit.
#pragma once

#include <doctest/doctest.h>

#include "search/evaluator/memory_evaluator.hpp"
#include "estimators/time_report.hpp"

namespace meshfit::test {

inline void check_same_memory(const MemoryReport& a, const MemoryReport& b) {
  CHECK(a.peak == b.peak);
  CHECK(a.peak_stage == b.peak_stage);
  CHECK(a.fits == b.fits);
  CHECK(a.static_floor == b.static_floor);
  CHECK(a.host_peak == b.host_peak);
  CHECK(a.host_fits == b.host_fits);
  REQUIRE(a.stages.size() == b.stages.size());
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    const StageMemory &x = a.stages[i], &y = b.stages[i];
    CAPTURE(i);
    CHECK(x.weights == y.weights);
    CHECK(x.grads == y.grads);
    CHECK(x.optimizer == y.optimizer);
    CHECK(x.gathered == y.gathered);
    CHECK(x.deferred_grads == y.deferred_grads);
    CHECK(x.host == y.host);
    CHECK(x.chunk_bytes == y.chunk_bytes);
    CHECK(x.chunk_inflight == y.chunk_inflight);
    CHECK(x.activations == y.activations);
    CHECK(x.tr_layer == y.tr_layer);
    CHECK(x.tr_layer_at == y.tr_layer_at);
    CHECK(x.tr_fsdp == y.tr_fsdp);
    CHECK(x.tr_bucket == y.tr_bucket);
    CHECK(x.tr_dpv == y.tr_dpv);
    CHECK(x.transient == y.transient);
    CHECK(x.step_transient == y.step_transient);
    CHECK(x.communicators == y.communicators);
    CHECK(x.tp_overlap_buffers == y.tp_overlap_buffers);
    CHECK(x.device == y.device);
  }
}

inline void check_same_time(const TimeReport& a, const TimeReport& b) {
  CHECK(a.step == b.step);
  CHECK(a.pipe == b.pipe);
  CHECK(a.tail == b.tail);
  CHECK(a.comm_zero == b.comm_zero);
  CHECK(a.comm_dp == b.comm_dp);
  CHECK(a.optimizer == b.optimizer);
  CHECK(a.mfu == b.mfu);
  REQUIRE(a.stages.size() == b.stages.size());
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    CHECK(a.stages[i].stage == b.stages[i].stage);
    CHECK(a.stages[i].forward == b.stages[i].forward);
    CHECK(a.stages[i].tau == b.stages[i].tau);
    CHECK(a.stages[i].comm_dp == b.stages[i].comm_dp);
  }
}

}  // namespace meshfit::test
