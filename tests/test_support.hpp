// Helpers shared by the tests: paths to tests/data and an in-process run of the CLI.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "engine/cli.hpp"

namespace meshfit::test {

inline std::string data_path(const std::string& rel) { return std::string(MESHFIT_TEST_DATA) + "/" + rel; }

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

inline CliResult run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace meshfit::test
