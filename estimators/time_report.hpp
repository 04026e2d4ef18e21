// What the step-time model returns (docs/spec/search-and-time.md §7.10).
#pragma once

#include <cstdint>
#include <vector>

namespace meshfit {

struct StageTime {
  std::int64_t stage = 0;
  // Per micro-batch, all chunks: compute.
  double forward = 0, backward = 0, recompute = 0, weight_grad = 0;
  // Per micro-batch: exposed communication by dimension (recompute's repeats included).
  double comm_tp = 0, comm_cp = 0, comm_ep = 0, comm_pp = 0, comm_zero = 0;
  // Per micro-batch: the EP time the EP overlap hides (not in comm_ep or τ_i); the schedule's
  // micro-batches without a partner expose it again (pipeline_schedule.hpp).
  double ep_hidden = 0;
  double tau = 0;  // τ_i
  // After the last backward (§7.9).
  double comm_dp = 0;    // C_red + C_ag + C_emb
  double optimizer = 0;  // T_opt
  double tail() const { return comm_dp + optimizer; }
};

struct TimeReport {
  std::vector<StageTime> stages;
  std::int64_t slowest_stage = 0;  // sets max τ_i (lowest index on ties)
  std::int64_t tail_stage = 0;     // sets T_tail
  double pipe = 0;                 // T_pipe
  double tail = 0;                 // T_tail
  double step = 0;                 // T
  // time_terms of cli.md, summing to T.
  double forward = 0, backward = 0, recompute = 0;
  double comm_tp = 0, comm_cp = 0, comm_ep = 0, comm_pp = 0, comm_zero = 0;
  double bubble = 0, comm_dp = 0, optimizer = 0;
  double tokens_per_sec_per_device = 0;
  double model_flops = 0;  // F_model = 3·gb·F_seq
  double mfu = 0;
};

}  // namespace meshfit
