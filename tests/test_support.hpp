// Helpers shared by the tests: paths to tests/data and an in-process run of the CLI.
#pragma once

#include <algorithm>
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

// Minimal XML well-formedness: every element closed in order, attributes quoted, one root.
// Returns the element names in document order ("" if malformed).
inline std::vector<std::string> xml_elements(const std::string& xml) {
  std::vector<std::string> stack, seen;
  std::size_t i = xml.find("?>");
  if (xml.rfind("<?xml", 0) != 0 || i == std::string::npos) return {};
  i += 2;
  int roots = 0;
  while ((i = xml.find('<', i)) != std::string::npos) {
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return {};
    std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return {};
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return {};
      stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    const std::string name = tag.substr(0, tag.find(' '));
    // Attribute values: an even number of quotes, no raw '<' inside the tag.
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0 || tag.find('<') != std::string::npos) return {};
    if (stack.empty()) ++roots;
    seen.push_back(name);
    if (!self_closing) stack.push_back(name);
  }
  if (!stack.empty() || roots != 1) return {};
  return seen;
}

}  // namespace meshfit::test
