// What each trainer can run, as meshfit estimates it: the conditions under which Megatron-LM,
// torchtitan or DeepSpeed has no setting for a strategy. The search applies them as the
// trainer_target policy when the run names a target (--target, --export-best, --framework), and
// the exporters (engine/megatron_args.cpp, torchtitan_toml.cpp, deepspeed_json.cpp) refuse with
// the same words, so that an export never refuses the search's own pick.
#pragma once

#include <optional>
#include <string>

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// Why `trainer` cannot run `s`, or nullopt when it can. Reads tp, sp, cp and its algorithm, pp,
// vpp and the schedule, ep, the ZeRO stage and shard group, n_rc and the run's layout options;
// never the recompute mode or the micro-batch size (a DeepSpeed search leaves selective recompute
// out of its space instead: DeepSpeed has none).
std::optional<std::string> trainer_refusal(Framework trainer, const Model& m, const Run& run, const Strategy& s);

}  // namespace meshfit
