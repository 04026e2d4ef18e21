// One function per subcommand. Each parses its own flags, writes results to `out` and
// diagnostics (warnings, "nothing fits") to `err`, returns an exit code, and throws InputError / UsageError for bad
// input (run_cli maps them to exit 2).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace meshfit {

int command_models(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int command_devices(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int command_show(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int command_estimate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int command_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int command_search(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int command_check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int command_export(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int command_explain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int command_sweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int command_merge(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace meshfit
