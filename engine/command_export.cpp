// `meshfit export`: one strategy in a trainer's own launch configuration (issue 7; cli.md).
#include "engine/atomic_file.hpp"
#include "engine/cli_options.hpp"
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
  desc.add_options()("strategy", po::value(&strategy_text), "the strategy string (or a train YAML path)")(
      "to", po::value(&to), "megatron, torchtitan, deepspeed or hyperparallel")(
      "output,o", po::value(&output), "write to FILE (atomically) instead of stdout");
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
  const Run& run = in.run;
  const Strategy& s = in.strategy;
  for (const auto& w : in.warnings) err << "meshfit export: warning: " << w << '\n';
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
