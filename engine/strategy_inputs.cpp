#include "engine/strategy_inputs.hpp"

#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "engine/model_config.hpp"
#include "engine/run_options_config.hpp"
#include "engine/sapp_nd_config.hpp"
#include "engine/strategy_string.hpp"
#include "engine/uncertainty.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

SappNdInputs load_sapp_nd_inputs(const std::string& command, const po::variables_map& vm,
                                 const ClusterFlags& cluster_flags, RunFlags& run_flags,
                                 const std::vector<std::string>& from_file, bool with_layout) {
  for (const auto& flag : from_file) {
    if (vm.count(flag) && !vm[flag].defaulted()) {
      throw UsageError("meshfit " + command + ": --" + flag + " comes from --sapp-nd-config " +
                       cluster_flags.sapp_nd_config + "; give one or the other\nTry 'meshfit " + command + " --help'.");
    }
  }
  collect_run_flags(vm, run_flags);
  SappNdInputs in{read_sapp_nd_config(cluster_flags.sapp_nd_config), {}, {}, {}};
  const SappNdConfig& cfg = in.config;
  run_flags.seq = cfg.seq;
  run_flags.global_batch = cfg.global_batch;
  run_flags.precision = cfg.precision;
  if (vm["rules"].defaulted()) run_flags.rules = "sapp-nd";  // the file asks SAPP-ND's question
  const std::optional<std::string> user_options = run_flags.run_options_file;
  run_flags.run_options_file.reset();
  in.model = model_from_config(cfg.model, cfg.source, cfg.model["name"].as<std::string>());
  if (!cluster_flags.device.empty()) {
    in.cluster = make_cluster(cluster_flags.device, cfg.devices);
  } else if (cfg.device) {
    in.cluster = Cluster{device_from_yaml(*cfg.device, cfg.source), cfg.devices};
  } else {
    throw UsageError("meshfit " + command + ": " + cfg.source +
                     " states no context.max_device_memory; give --device\nTry 'meshfit " + command + " --help'.");
  }
  in.run = make_run(run_flags, true);
  apply_run_options(cfg.run_options, cfg.source, in.run);
  if (with_layout) apply_run_options(cfg.layout_options, cfg.source, in.run);
  // The user's own run options last: they may change what the file says.
  if (user_options) apply_run_options(load_yaml_file(*user_options), *user_options, in.run);
  return in;
}

StrategyInputs load_strategy_inputs(const std::string& command, const po::variables_map& vm,
                                    const std::vector<std::string>& required, const ClusterFlags& cluster_flags,
                                    RunFlags& run_flags, const std::string& strategy_text, bool check_rules) {
  if (!cluster_flags.sapp_nd_config.empty()) {
    SappNdInputs file = load_sapp_nd_inputs(
        command, vm, cluster_flags, run_flags,
        {"model", "devices", "strategy", "seq", "global-batch", "micro-batch", "precision", "grad-bytes"}, true);
    StrategyInputs in{std::move(file.model), std::move(file.cluster), std::move(file.run), {}, {}};
    apply_fit_margin(in.run, in.model, in.cluster, parse_fit_margin(run_flags.fit_margin));
    resolve_device_facts(in.run, in.cluster.device);
    in.strategy = parse_strategy(file.config.strategy, in.model, in.run, in.cluster, in.warnings, check_rules,
                                 InputOrigin{file.config.source, "", {}});
    return in;
  }
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
  resolve_device_facts(in.run, in.cluster.device);
  in.strategy = parse_strategy(strategy_text, in.model, in.run, in.cluster, in.warnings, check_rules);
  return in;
}

}  // namespace meshfit
