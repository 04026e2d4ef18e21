// Option groups shared by several subcommands, and the parse step every subcommand uses.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "engine/input_error.hpp"
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

// --model, --device, --devices.
struct ClusterFlags {
  std::string model;
  std::string device;
  std::string devices;  // one count, a list "8,16,64", or a range "8..1024" (search)
  std::string headroom = "0";
  std::string sapp_nd_config;  // --sapp-nd-config: SAPP-ND's MindFormers or HyperParallel YAML
};
void add_cluster_options(po::options_description& desc, ClusterFlags& flags);
// --sapp-nd-config FILE (estimate, explain, export, search): the model, cluster and run from
// SAPP-ND's own input file (engine/sapp_nd_config.hpp).
void add_sapp_nd_option(po::options_description& desc, ClusterFlags& flags);
// --devices as one positive count; throws InputError naming the flag otherwise.
std::int64_t single_device_count(const ClusterFlags& flags);
// --devices as counts: "64", "8,16,64", "A..B" = A, 2A, 4A, … and B, or "A..B:S" = A, A+S, … and B.
std::vector<std::int64_t> device_counts(const ClusterFlags& flags);
// "10%" of the capacity, or a size below the capacity (GiB by default: "5", "5GiB", "512MiB",
// "5GB"); throws InputError.
double parse_headroom(const std::string& text, double capacity, const InputOrigin& origin = {});
// A numeric flag's value within [lo, hi] (NaN refused): throws InputError naming the flag and the
// range otherwise. Every numeric flag goes through it.
void check_flag_range(const std::string& flag, double value, double lo, double hi);
inline constexpr std::int64_t kMaxThreads = 1024;
inline constexpr std::int64_t kMaxTop = 10000;
// The verify mode (search/search_verifier.hpp) asked for by the environment: MESHFIT_VERIFY set
// and neither empty nor "0".
bool verify_requested_by_environment();
// --seq: a positive token count, "8192" or "8k" (8·1024); throws InputError naming the flag.
std::int64_t parse_sequence_length(const std::string& text);
// Copies the optional run flags the user gave out of `vm` (program_options has no optional<T>).
void collect_run_flags(const po::variables_map& vm, RunFlags& flags);

// Parses `args` against `desc` (positional names optional); throws UsageError on a bad flag.
po::variables_map parse_options(const std::string& command, const std::vector<std::string>& args,
                                const po::options_description& desc,
                                const po::positional_options_description* positional = nullptr);

// parse_options, and with --help the usage printed to `out`: nullopt then (the command exits 0).
std::optional<po::variables_map> parse_or_help(const std::string& command, const std::vector<std::string>& args,
                                               const po::options_description& desc, const CommonFlags& common,
                                               std::ostream& out,
                                               const po::positional_options_description* positional = nullptr);

// "table"/"json"/"csv" -> OutputFormat; `allowed` lists the formats this subcommand writes.
OutputFormat parse_format(const std::string& value, const std::vector<std::string>& allowed);

}  // namespace meshfit
