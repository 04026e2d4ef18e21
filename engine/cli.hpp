// The `meshfit` command line: subcommand dispatch, exit codes (docs/spec/cli.md).
#pragma once

#include <exception>
#include <ostream>
#include <string>
#include <vector>

namespace meshfit {

// Exit codes of every subcommand (cli.md): 0 success, 1 a check failed or nothing fits,
// 2 bad input or usage. 3 is an internal error (a bug: please report it).
enum ExitCode : int { kExitOk = 0, kExitFailed = 1, kExitBadInput = 2, kExitInternal = 3 };

// Runs `meshfit args...` (args excludes the program name). Results go to `out`, diagnostics to `err`.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Prints `error` (an exception a subcommand threw) as run_cli prints it and returns the exit code
// it means. For a subcommand that must say what went wrong before it ends (sweep's MPI ranks:
// mpirun ends every rank once one exits with an error). Exceptions not from std::exception rethrow.
int report_error(const std::string& subcommand, const std::exception_ptr& error, std::ostream& err);

}  // namespace meshfit
