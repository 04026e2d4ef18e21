// One function per subcommand. Each parses its own flags, writes results to `out`, returns an
// exit code, and throws InputError / UsageError for bad input (run_cli maps them to exit 2).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace meshfit {

int command_models(const std::vector<std::string>& args, std::ostream& out);
int command_devices(const std::vector<std::string>& args, std::ostream& out);
int command_show(const std::vector<std::string>& args, std::ostream& out);
int command_estimate(const std::vector<std::string>& args, std::ostream& out);
int command_validate(const std::vector<std::string>& args, std::ostream& out);

}  // namespace meshfit
