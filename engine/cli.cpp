#include "engine/cli.hpp"

#include <exception>
#include <functional>
#include <map>

#include "engine/commands.hpp"
#include "engine/input_error.hpp"
#include "engine/presets.hpp"
#include "engine/utf8_text.hpp"

#ifndef MESHFIT_VERSION
#define MESHFIT_VERSION "0.0.0"
#endif

namespace meshfit {

namespace {

using Command = std::function<int(const std::vector<std::string>&, std::ostream&, std::ostream&)>;

struct CommandInfo {
  Command run;
  const char* summary;
};

const std::map<std::string, CommandInfo>& commands() {
  static const std::map<std::string, CommandInfo> table = {
      {"models", {command_models, "list the bundled model presets"}},
      {"devices", {command_devices, "list the bundled device presets"}},
      {"show", {command_show, "the resolved model: dims, layer kinds, parameter counts by part"}},
      {"estimate", {command_estimate, "per-stage, per-term peak memory of one strategy"}},
      {"explain", {command_explain, "why a strategy does or does not fit, and what single change would"}},
      {"export", {command_export, "a strategy as Megatron-LM args, torchtitan TOML, DeepSpeed JSON or train YAML"}},
      {"search", {command_search, "every strategy scored; the Pareto front of those that fit"}},
      {"check", {command_check, "CI gate: does every model (manifest or files) still fit? exit 0/1/2"}},
      {"validate", {command_validate, "estimate measured cases and compare (median error, worst misses)"}},
      {"sweep", {command_sweep, "search every point of models x devices x counts x seq x batch; best per point"}},
      {"merge", {command_merge, "join the JSON shards of a sweep (sweep --shard K/N) into one result"}},
  };
  return table;
}

void print_usage(std::ostream& out) {
  out << "meshfit " MESHFIT_VERSION
         " - find how to shard an LLM's training over a cluster\n\n"
         "Usage: meshfit <subcommand> [options]\n\nSubcommands:\n";
  for (const auto& [name, info] : commands()) {
    out << "  " << name << std::string(10 - name.size(), ' ') << info.summary << '\n';
  }
  out << "\nRun 'meshfit <subcommand> --help' for its options.\n"
         "Exit codes: 0 success; 1 a check failed or nothing fits; 2 bad input or usage;\n"
         "3 internal error.\n";
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    print_usage(err);
    return kExitBadInput;
  }
  const std::string& first = args[0];
  if (first == "--version" || first == "-V") {
    out << "meshfit " MESHFIT_VERSION "\n";
    return kExitOk;
  }
  if (first == "--help" || first == "-h" || first == "help") {
    print_usage(out);
    return kExitOk;
  }
  const auto it = commands().find(first);
  if (it == commands().end()) {
    std::vector<std::string> names;
    for (const auto& [name, info] : commands()) names.push_back(name);
    err << "meshfit: unknown subcommand '" << first << "'" << suggestion_text(first, names) << "\n"
        << "Try 'meshfit --help'.\n";
    return kExitBadInput;
  }
  try {
    return it->second.run(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  } catch (const std::exception&) {
    return report_error(first, std::current_exception(), err);
  }
}

int report_error(const std::string& subcommand, const std::exception_ptr& error, std::ostream& err) {
  try {
    std::rethrow_exception(error);
  } catch (const UsageError& e) {
    err << printable(e.what()) << '\n';
    return kExitBadInput;
  } catch (const InputError& e) {
    err << "meshfit " << subcommand << ": error: " << printable(e.what()) << '\n';
    return kExitBadInput;
  } catch (const std::exception& e) {
    err << "meshfit " << subcommand << ": internal error: " << printable(e.what()) << '\n';
    return kExitInternal;
  }
}

}  // namespace meshfit
