// `meshfit check`: the CI gate over many models (docs/spec/cli.md, "Check manifest" and exit
// codes). Every entry is checked, in parallel, even when others fail or cannot be read.
#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

#include <tbb/global_control.h>

#include "engine/atomic_file.hpp"
#include "engine/check_baseline.hpp"
#include "engine/check_manifest.hpp"
#include "engine/check_reports.hpp"
#include "engine/check_runner.hpp"
#include "engine/cli_options.hpp"
#include "engine/commands.hpp"
#include "engine/input_error.hpp"
#include "engine/text_format.hpp"

namespace meshfit {

int command_check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CommonFlags common;
  ClusterFlags cluster_flags;
  RunFlags run_flags;
  std::vector<std::string> inputs;
  std::string strategy, junit, json, baseline, max_growth = "5%";
  double max_peak_gib = 0, min_tokens = 0;
  std::int64_t threads = 0;
  po::options_description desc(
      "Usage: meshfit check MANIFEST.yaml [options]\n"
      "       meshfit check FILES... --device D --devices N --seq S --global-batch B [options]\n\n"
      "Checks every entry: a pinned strategy must fit its budget (and meet max_peak_gib /\n"
      "min_tokens_per_sec_per_device); a free entry must have at least one fitting strategy.\n"
      "Manifest schema: docs/spec/cli.md. FILES may be globs ('models/*.json').\n\n"
      "Exit codes: 0 every entry passes; 1 at least one entry fails its check;\n"
      "2 at least one entry could not be read or is invalid (or bad usage).\n\n"
      "Options");
  add_cluster_options(desc, cluster_flags);
  desc.add_options()("strategy", po::value(&strategy), "FILES mode: the strategy every model must fit with")(
      "max-peak-gib", po::value(&max_peak_gib), "FILES mode: expected maximum peak memory (GiB)")(
      "min-tokens-per-sec", po::value(&min_tokens), "FILES mode: expected minimum tokens/s per device")(
      "junit", po::value(&junit), "write a JUnit XML report to FILE (atomically)")(
      "json", po::value(&json), "write the JSON report to FILE (atomically)")(
      "baseline", po::value(&baseline), "an earlier --json report: fail entries that grew")(
      "max-growth", po::value(&max_growth)->default_value("5%"),
      "with --baseline: allowed growth of a pinned peak or a best step time")(
      "threads", po::value(&threads)->default_value(0), "worker threads (default: all cores)")(
      "input", po::value(&inputs)->composing(), "manifest or model files");
  add_run_options(desc, run_flags);
  add_common_options(desc, common);
  po::positional_options_description positional;
  positional.add("input", -1);
  const auto parsed = parse_or_help("check", args, desc, common, out, &positional);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const OutputFormat format = parse_format(common.format, {"table", "json"});
  if (inputs.empty()) throw UsageError("meshfit check: give a manifest or model files\nTry 'meshfit check --help'.");
  const double growth = parse_max_growth(max_growth);
  check_distinct_outputs({{"--json", json}, {"--junit", junit}});
  std::optional<tbb::global_control> limit;
  check_flag_range("--threads", static_cast<double>(threads), 0, kMaxThreads);
  if (vm.count("max-peak-gib")) check_flag_range("--max-peak-gib", max_peak_gib, 0, 1 << 20);
  if (vm.count("min-tokens-per-sec")) check_flag_range("--min-tokens-per-sec", min_tokens, 0, 1e12);
  if (threads > 0) limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));

  std::vector<CheckEntry> entries;
  // One YAML file without the FILES-mode cluster flags is a manifest, even one that does not
  // parse or lacks 'entries' (a typo): its error is then reported as the manifest's.
  const bool manifest =
      inputs.size() == 1 &&
      (looks_like_manifest(inputs[0]) ||
       ((inputs[0].ends_with(".yaml") || inputs[0].ends_with(".yml")) && !vm.count("device") && !vm.count("devices")));
  if (manifest) {
    for (const char* flag :
         {"model", "device", "devices", "strategy", "seq", "global-batch", "max-peak-gib", "min-tokens-per-sec"}) {
      if (vm.count(flag)) {
        throw UsageError(std::string("meshfit check: --") + flag +
                         " applies to FILES mode; with a manifest set it in the manifest (or its defaults)");
      }
    }
    entries = read_check_manifest(inputs[0]);
  } else {
    for (const char* required : {"device", "devices", "seq", "global-batch"}) {
      if (!vm.count(required)) {
        // A file named that is not there is the likelier mistake (a mistyped manifest): say so.
        for (const auto& input : inputs) {
          if (input.find_first_of("*?[") == std::string::npos && !std::filesystem::exists(input)) {
            throw InputError(input + ": cannot read file: No such file or directory");
          }
        }
        throw UsageError(std::string("meshfit check: --") + required +
                         " is required when checking model files\nTry 'meshfit check --help'.");
      }
    }
    collect_run_flags(vm, run_flags);
    CheckEntry shared;
    shared.device = cluster_flags.device;
    shared.devices = single_device_count(cluster_flags);
    shared.run = run_flags;
    shared.headroom = cluster_flags.headroom;
    if (vm.count("strategy")) shared.strategy = strategy;
    if (vm.count("max-peak-gib")) shared.max_peak_gib = max_peak_gib;
    if (vm.count("min-tokens-per-sec")) shared.min_tokens_per_sec_per_device = min_tokens;
    entries = entries_from_files(inputs, shared);
  }
  const auto baseline_entries =
      baseline.empty() ? std::map<std::string, BaselineEntry>{} : read_check_baseline(baseline);

  const auto start = std::chrono::steady_clock::now();
  std::vector<CheckResult> results = run_checks(entries);
  if (!baseline.empty()) compare_with_baseline(results, baseline_entries, growth);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (!json.empty()) {
    std::ostringstream text;
    write_check_json(results, text);
    write_file_atomically(json, text.str(), "--json");
  }
  if (!junit.empty()) {
    std::ostringstream text;
    write_check_junit(results, text);
    write_file_atomically(junit, text.str(), "--junit");
  }
  if (format == OutputFormat::json) {
    write_check_json(results, out);
  } else {
    write_check_summary(results, out);
  }
  if (const char* gh = std::getenv("GITHUB_ACTIONS"); gh && *gh) {
    write_github_annotations(results, format == OutputFormat::json ? err : out);  // keep stdout parseable
  }
  err << "meshfit check: " << results.size() << " entr" << (results.size() == 1 ? "y" : "ies") << " in "
      << fixed(seconds, 2) << " s\n";
  return check_exit_code(results);
}

}  // namespace meshfit
