// A stage's data-parallel time (docs/spec/search-and-time.md §7.5, §7.6, §7.9): the ZeRO/FSDP
// communication exposed per micro-batch (comm_zero), the gradient reduction, gathers and
// tied-table all-reduce after the last backward (comm_dp), and the optimizer step. One term,
// used by the step-time model and its plain reference alike.
#pragma once

#include "estimators/collectives.hpp"
#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/model_states.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"
#include "estimators/time_report.hpp"

namespace meshfit {

// The strategy's data-parallel groups and what every stage's term reads of them (§4).
struct DataParallelGroups {
  Group reduce, shard, replicate, expert_reduce, expert_shard, ends;
  ZeroDivisors z;
  bool hsdp = false, reshard = false, split_ends = false;
  double table = 0;          // one vocabulary table's parameters per rank, V_pad·h/tp
  double bucket_params = 0;  // parameters per gradient bucket
};
// `split_ends`: the embedding and the head on different stages (§5.3).
DataParallelGroups data_parallel_groups(const Model& m, const Run& run, const Device& d, const Strategy& s,
                                        bool split_ends);

// What a stage holds, as the term reads it: dense/shared and routed parameters per rank, FSDP
// units, and whether it holds an end of the model.
struct StageParams {
  double P_d = 0, P_e = 0, units = 0;
  bool embedding = false, head = false;
};

// Sets st.comm_zero, st.comm_dp, st.optimizer and st.tau from st's compute and communication.
void data_parallel_time(StageTime& st, const StageParams& p, const DataParallelGroups& g, const Model& m,
                        const Run& run, const Device& d, const Strategy& s);

}  // namespace meshfit
