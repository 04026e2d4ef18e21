// The `meshfit` command line: subcommand dispatch, exit codes (docs/spec/cli.md).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace meshfit {

// Exit codes of every subcommand (cli.md): 0 success, 1 a check failed or nothing fits,
// 2 bad input or usage. 3 is an internal error (a bug: please report it).
enum ExitCode : int { kExitOk = 0, kExitFailed = 1, kExitBadInput = 2, kExitInternal = 3 };

// Runs `meshfit args...` (args excludes the program name). Results go to `out`, diagnostics to `err`.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace meshfit
