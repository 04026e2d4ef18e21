#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "engine/cli.hpp"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  errno = 0;
  int code = meshfit::run_cli(args, std::cout, std::cerr);
  std::cout.flush();
  // A result that did not reach its reader (a full disk, a closed pipe, > /dev/full) is not a
  // success: say so and exit 2, as for an output file that cannot be written.
  if (!std::cout) {
    const int why = errno;
    std::cerr << "meshfit: error: cannot write the output to stdout"
              << (why ? std::string(": ") + std::strerror(why) : "") << '\n';
    if (code == meshfit::kExitOk || code == meshfit::kExitFailed) code = meshfit::kExitBadInput;
  }
  return code;
}
