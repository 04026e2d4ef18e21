#include "engine/strategy_inputs.hpp"

#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "engine/model_config.hpp"
#include "engine/strategy_string.hpp"
#include "engine/uncertainty.hpp"

namespace meshfit {

StrategyInputs load_strategy_inputs(const std::string& command, const po::variables_map& vm,
                                    const std::vector<std::string>& required, const ClusterFlags& cluster_flags,
                                    RunFlags& run_flags, const std::string& strategy_text, bool check_rules) {
  for (const auto& flag : required) {
    if (!vm.count(flag)) {
      throw UsageError("meshfit " + command + ": --" + flag + " is required\nTry 'meshfit " + command + " --help'.");
    }
  }
  collect_run_flags(vm, run_flags);
  StrategyInputs in{load_model(cluster_flags.model),
                    make_cluster(cluster_flags.device, single_device_count(cluster_flags)),
                    make_run(run_flags, true),
                    {},
                    {}};
  apply_fit_margin(in.run, in.model, in.cluster, parse_fit_margin(run_flags.fit_margin));
  in.strategy = parse_strategy(strategy_text, in.model, in.run, in.cluster, in.warnings, check_rules);
  return in;
}

}  // namespace meshfit
