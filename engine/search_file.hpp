// A search file (`meshfit search --search-file FILE.yaml`, search-and-time.md §1): for each
// dimension `auto`, one value or a list; policy switches; headroom; how many top strategies; run
// options (the time model's run fields of §7.11 among them). Flags given on the command line win.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "search/policies.hpp"
#include "search/search_space.hpp"

namespace meshfit {

struct SearchFile {
  Pins pins;                                      // empty = auto
  std::vector<std::pair<Policy, bool>> policies;  // in file order
  std::optional<std::string> headroom;            // as --headroom takes it: "10%" or GiB
  std::optional<std::size_t> top;
  bool dedupe_ties = false;
  YAML::Node run_options;  // null when absent
  std::string source;
};

// Reads and checks the file; every mistake is an InputError naming the file, the field and what
// was expected.
SearchFile load_search_file(const std::string& path);

}  // namespace meshfit
