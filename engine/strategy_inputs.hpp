// What the one-strategy commands (estimate, explain, export) read: the required flags checked,
// then the model, the cluster at one device count, the run and the strategy string.
#pragma once

#include <string>
#include <vector>

#include "engine/cli_options.hpp"
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

// A missing flag of `required` is a UsageError naming it and `command`. `check_rules` false keeps
// a strategy that breaks validity rules (explain lists them instead of refusing).
StrategyInputs load_strategy_inputs(const std::string& command, const po::variables_map& vm,
                                    const std::vector<std::string>& required, const ClusterFlags& cluster_flags,
                                    RunFlags& run_flags, const std::string& strategy_text, bool check_rules = true);

}  // namespace meshfit
