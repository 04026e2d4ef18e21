// Option groups shared by several subcommands, and the parse step every subcommand uses.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "engine/run_config.hpp"

namespace meshfit {

namespace po = boost::program_options;

enum class OutputFormat { table, json, csv };

struct CommonFlags {
  std::string format = "table";
  bool help = false;
};

void add_common_options(po::options_description& desc, CommonFlags& flags);
void add_run_options(po::options_description& desc, RunFlags& flags);
// Copies the optional run flags the user gave out of `vm` (program_options has no optional<T>).
void collect_run_flags(const po::variables_map& vm, RunFlags& flags);

// Parses `args` against `desc` (positional names optional); throws UsageError on a bad flag.
po::variables_map parse_options(const std::string& command, const std::vector<std::string>& args,
                                const po::options_description& desc,
                                const po::positional_options_description* positional = nullptr);

// "table"/"json"/"csv" -> OutputFormat; `allowed` lists the formats this subcommand writes.
OutputFormat parse_format(const std::string& value, const std::vector<std::string>& allowed);

}  // namespace meshfit
