// What the one-strategy commands (estimate, explain, export) read: the required flags checked,
// then the model, the cluster at one device count, the run and the strategy string.
#pragma once

#include <string>
#include <vector>

#include "engine/cli_options.hpp"
#include "engine/sapp_nd_config.hpp"
#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

struct StrategyInputs {
  Model model;
  Cluster cluster;
  Run run;
  Strategy strategy;
  std::vector<std::string> warnings;  // from the strategy string
};

// --sapp-nd-config (engine/sapp_nd_config.hpp): the model, the cluster at the file's device count
// and the run (its dtypes and settings, then --run-options) from SAPP-ND's file; `from_file` the
// flags the file replaces, a UsageError when given too; `with_layout`: its per-stage layers and
// recompute counts too (they belong to its strategy). `--rules` defaults to sapp-nd.
struct SappNdInputs {
  SappNdConfig config;
  Model model;
  Cluster cluster;
  Run run;
};
SappNdInputs load_sapp_nd_inputs(const std::string& command, const po::variables_map& vm,
                                 const ClusterFlags& cluster_flags, RunFlags& run_flags,
                                 const std::vector<std::string>& from_file, bool with_layout);

// A missing flag of `required` is a UsageError naming it and `command`. `check_rules` false keeps
// a strategy that breaks validity rules (explain lists them instead of refusing).
StrategyInputs load_strategy_inputs(const std::string& command, const po::variables_map& vm,
                                    const std::vector<std::string>& required, const ClusterFlags& cluster_flags,
                                    RunFlags& run_flags, const std::string& strategy_text, bool check_rules = true);

}  // namespace meshfit
