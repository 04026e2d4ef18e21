// The named step-time terms as reports show them (docs/spec/cli.md, `time_terms`): they sum to
// the step time T (docs/spec/search-and-time.md §7.10).
#pragma once

#include <utility>
#include <vector>

#include "estimators/time_report.hpp"

namespace meshfit {

// (JSON key, seconds), in report order.
inline std::vector<std::pair<const char*, double>> time_terms(const TimeReport& t) {
  return {{"forward", t.forward}, {"backward", t.backward}, {"recompute", t.recompute}, {"comm_tp", t.comm_tp},
          {"comm_cp", t.comm_cp}, {"comm_ep", t.comm_ep},   {"comm_pp", t.comm_pp},     {"comm_zero", t.comm_zero},
          {"bubble", t.bubble},   {"comm_dp", t.comm_dp},   {"optimizer", t.optimizer}};
}

}  // namespace meshfit
