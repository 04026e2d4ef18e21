// The model states of the embedding and output tables as SAPP-ND prices them (memory-model.md
// §17.5.4, SeedConvention::table_shard): MindSpore's optimizer parallelism shards the embedding
// over tp·dp, the output like the layers' non-expert part.
#pragma once

#include "estimators/model.hpp"
#include "estimators/model_states.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit::sapp_nd {

struct TableStates {
  ModelStates embedding;  // EvalHead.stat_embed_*
  ModelStates output;     // EvalTailSingle.stat_output_single_*
  ModelStates mtp_extra;  // per depth: EvalMTP's eh_proj and norms, and its embedding again
};
TableStates table_states(const Model& m, const Run& run, const Strategy& s);

}  // namespace meshfit::sapp_nd
