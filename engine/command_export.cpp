// `meshfit export`: one strategy in a trainer's own launch configuration (issue 7; cli.md).
#include "engine/atomic_file.hpp"
#include "engine/cli_options.hpp"
#include "search/pipeline_balancer.hpp"
#include "engine/commands.hpp"
#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/model_config.hpp"
#include "engine/strategy_inputs.hpp"
#include "engine/strategy_string.hpp"
#include "engine/trainer_export.hpp"

namespace meshfit {

int command_export(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CommonFlags common;
  ClusterFlags cluster_flags;
  RunFlags run_flags;
  std::string strategy_text, to, output;
  po::options_description desc(
      "Usage: meshfit export --model M --device D --devices N --seq S --global-batch B --strategy S\n"
      "                      --to megatron|torchtitan|deepspeed|hyperparallel [-o FILE]\n\n"
      "Writes what the trainer needs to run the strategy: Megatron-LM arguments, a torchtitan TOML,\n"
      "a DeepSpeed JSON or a HyperParallel/SAPP-ND train YAML (only the fields the strategy sets).\n"
      "A strategy the trainer cannot express is an error (exit 2) that says which part and why.\n"
      "--strategy also takes a train YAML written by --to hyperparallel.\nOptions");
  add_cluster_options(desc, cluster_flags);
  add_sapp_nd_option(desc, cluster_flags);
  desc.add_options()("strategy", po::value(&strategy_text), "the strategy string (or a train YAML path)")(
      "to", po::value(&to), "megatron, torchtitan, deepspeed or hyperparallel")(
      "output,o", po::value(&output), "write to FILE (atomically) instead of stdout");
  bool balance = false;
  double balance_slack = 0;
  desc.add_options()("balance", po::bool_switch(&balance),
                     "export the balanced pipeline layout (estimate --balance) instead of the even split")(
      "balance-slack", po::value(&balance_slack), "as estimate's --balance-slack (default 0)");
  add_run_options(desc, run_flags);
  desc.add_options()("help,h", po::bool_switch(&common.help), "show this help");
  const auto parsed = parse_or_help("export", args, desc, common, out);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  if (!vm.count("to")) throw UsageError("meshfit export: --to is required\nTry 'meshfit export --help'.");
  const auto format = trainer_format_by_name(to);
  if (!format)
    throw InputError("command line", "--to",
                     std::string("one of ") + trainer_format_names() + ", got " + quoted_text(to));
  const StrategyInputs in = load_strategy_inputs("export", vm, {"model", "device", "devices", "strategy"},
                                                 cluster_flags, run_flags, strategy_text);
  const Model& model = in.model;
  Run run = in.run;
  Strategy s = in.strategy;
  for (const auto& w : in.warnings) err << "meshfit export: warning: " << w << '\n';
  if (balance) {
    check_flag_range("--balance-slack", balance_slack, 0, 10);
    const auto balanced = balance_pipeline(model, run, in.cluster, s, 1 + balance_slack);
    if (!balanced) {
      throw ExportError(
          "--balance: this strategy has no balanced layout (pp > 1 with vpp 1, no DualPipeV, "
          "within the time bound)");
    }
    run = with_layout(run, *balanced);
    s.recompute_layers = 0;  // the per-stage counts stand for one count
  }
  const TrainerConfig config = export_strategy(*format, model, run, s);
  for (const auto& n : config.notes) err << "meshfit export: note: " << n << '\n';
  if (output.empty()) {
    out << config.text;
  } else {
    write_file_atomically(output, config.text, "--output");
  }
  return 0;
}

}  // namespace meshfit
