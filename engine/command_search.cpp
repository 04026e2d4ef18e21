// `meshfit search`: every strategy for a cluster, scored in parallel, the Pareto-feasible ones out
// (docs/spec/cli.md, search-and-time.md §6).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>

#include <tbb/global_control.h>

#include "engine/atomic_file.hpp"
#include "engine/cli_options.hpp"
#include "engine/strategy_inputs.hpp"
#include "engine/commands.hpp"
#include "engine/device_config.hpp"
#include "engine/front_chart_svg.hpp"
#include "engine/html_report.hpp"
#include "engine/input_error.hpp"
#include "engine/interrupt.hpp"
#include "engine/utf8_text.hpp"
#include "engine/json_writer.hpp"
#include "engine/search_pins.hpp"
#include "engine/search_reports.hpp"
#include "engine/memory_terms.hpp"
#include "engine/model_config.hpp"
#include "engine/run_options_config.hpp"
#include "engine/search_file.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"
#include "engine/trainer_export.hpp"
#include "engine/uncertainty.hpp"
#include "engine/yaml_fields.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "search/evaluator/step_time_evaluator.hpp"
#include "search/search_verifier.hpp"
#include "search/search_workspace.hpp"
#include "search/strategy_search.hpp"

namespace meshfit {

namespace {

// The verify mode: a reported figure the plain estimators do not reproduce is a bug (exit 3).
void report_verify_differences(const SearchSpace& space, const SearchResult& r, double headroom) {
  const auto diffs = verify_reported(space, r, headroom);
  if (diffs.empty()) return;
  std::string text = "verify: " + std::to_string(diffs.size()) + " reported strategies differ from a fresh estimate:";
  for (const auto& d : diffs) text += "\n  " + d.where + " " + strategy_to_string(d.strategy) + ": " + d.what;
  throw std::logic_error(text);
}

struct SearchFlags {
  CommonFlags common;
  ClusterFlags cluster;
  RunFlags run;
  PinFlags pins;
  std::string plot_file, report_file, export_best, export_out, search_file, prune_off, target;
  std::int64_t top = 10, threads = 0;
  std::string tight_margin = "6%", train_tokens;
  double gpu_hour_price = 0;
  bool no_prune = false, dedupe_ties = false, verify = false, timings = false, wide = false, quiet = false;
};

po::options_description search_description(SearchFlags& f) {
  po::options_description desc(
      "Usage: meshfit search --model M --device D --devices N --seq S --global-batch B [pins] [options]\n\n"
      "Enumerates every valid strategy, estimates memory and step time, and prints the Pareto front\n"
      "(peak memory vs step time) of those that fit, the fastest ones, and counts. Exit 0 when\n"
      "something fits, 1 when nothing does, 2 on bad input.\nOptions");
  add_cluster_options(desc, f.cluster);
  add_sapp_nd_option(desc, f.cluster);
  add_pin_options(desc, f.pins);
  desc.add_options()("search-file", po::value(&f.search_file),
                     "YAML of pins (auto, a value or a list per dimension), policies, "
                     "headroom, top and run_options; flags given here win")(
      "top", po::value(&f.top)->default_value(10), "how many of the fastest fitting strategies to list (1 to 10,000)")(
      "threads", po::value(&f.threads)->default_value(0), "worker threads (default 0: all cores; at most 1,024)")(
      "no-prune", po::bool_switch(&f.no_prune), "estimate every valid strategy (no micro-batch pruning)")(
      "prune-off", po::value(&f.prune_off),
      "switch the named pruning passes off (list; the output does not change, only the time): rule_subtrees, "
      "weighted_vpp_tails, micro_batch_bisection, micro_batch_overflow, zero_setting_overflow, dominance_floor, "
      "top_k_floor")("dedupe-ties", po::bool_switch(&f.dedupe_ties),
                     "keep one strategy (the first by key) per exact tie on the front")(
      "verify", po::bool_switch(&f.verify),
      "re-estimate every reported strategy from scratch and fail (exit 3) on any "
      "difference from the search's figures (also MESHFIT_VERIFY=1)")(
      "tight-margin", po::value(&f.tight_margin)->default_value("6%"),
      "mark a fitting strategy tight when its peak is within this share of the budget (default: the memory "
      "estimate's median error on measured runs)")("timings", po::bool_switch(&f.timings),
                                                   "print the seconds the search took (they differ run to run)")(
      "plot", po::value(&f.plot_file), "write an SVG chart of the search: fitting strategies, the front, the budget")(
      "report", po::value(&f.report_file), "write a self-contained HTML report: inputs, front, chart, stage memory")(
      "export-best", po::value(&f.export_best),
      "the fastest fitting strategy for a trainer: megatron, torchtitan, deepspeed or hyperparallel")(
      "export-out", po::value(&f.export_out),
      "write --export-best's output to FILE (default: after the results; "
      "with --format json, as its \"export\" field)");
  desc.add_options()("train-tokens", po::value(&f.train_tokens),
                     "tokens to train on (15T, 300B, 1e12): each row's days and GPU-hours")(
      "gpu-hour-price", po::value(&f.gpu_hour_price), "price of a GPU-hour, with --train-tokens: each row's cost")(
      "target", po::value(&f.target),
      "keep only strategies this trainer can run: megatron, torchtitan or deepspeed (also implied "
      "by --export-best and by a --framework given)")(
      "wide", po::bool_switch(&f.wide),
      "a table column for every dimension and the peak's stage (default: the dimensions that vary)")(
      "quiet,q", po::bool_switch(&f.quiet), "no progress line and no notes on stderr (errors still)");
  add_run_options(desc, f.run);
  desc.add_options()("format", po::value(&f.common.format)->default_value("table"), "table, json or csv")(
      "help,h", po::bool_switch(&f.common.help), "show this help");
  return desc;
}

// --tight-margin as a fraction of the budget: "6%" or 0.06.
double tight_fraction(const SearchFlags& f) {
  std::string t = f.tight_margin;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  const auto v = parse_number(t);
  const double fraction = v ? (percent ? *v / 100 : *v) : -1;
  if (!(fraction >= 0 && fraction < 1)) {
    throw InputError(
        "command line", "--tight-margin",
        "expected a share of the budget from 0% to below 100% (6%, or 0.06), got " + quoted_text(f.tight_margin));
  }
  return fraction;
}

// "15T", "300B", "2.5e12": a token count (K, M, B, T: powers of 1000, as token budgets are named).
double parse_token_count(const std::string& text) {
  std::string t = text;
  double scale = 1;
  if (!t.empty()) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
    const double units[] = {1e3, 1e6, 1e9, 1e12};
    const std::string names = "KMBT";
    if (const auto at = names.find(u); at != std::string::npos) {
      scale = units[at];
      t.pop_back();
    }
  }
  const auto v = parse_number(t);
  if (!v || !(*v > 0) || *v * scale > 1e18) {
    throw InputError("command line", "--train-tokens",
                     "expected a positive token count (15T, 300B, 2.5e12), got " + quoted_text(text));
  }
  return *v * scale;
}

void set_training_cost(const SearchFlags& f, SearchReport& rep) {
  if (!f.train_tokens.empty()) rep.train_tokens = parse_token_count(f.train_tokens);
  if (f.gpu_hour_price != 0) {
    check_flag_range("--gpu-hour-price", f.gpu_hour_price, 0, 1e6);
    if (!rep.train_tokens) throw UsageError("meshfit search: --gpu-hour-price needs --train-tokens");
    rep.gpu_hour_price = f.gpu_hour_price;
  }
}

// The trainer the strategies must run on: --target, else --export-best's trainer, else a
// --framework the user gave. The trainer_target policy (search/trainer_targets.hpp) then keeps
// only what it can run; DeepSpeed has no selective recompute, so its space leaves that mode out.
void apply_target(const SearchFlags& f, const po::variables_map& vm, Run& run, SearchSpace& space) {
  auto trainer = [](const std::string& name) -> std::optional<Framework> {
    if (name == "megatron") return Framework::megatron;
    if (name == "torchtitan") return Framework::torchtitan;
    if (name == "deepspeed") return Framework::deepspeed;
    return std::nullopt;
  };
  std::optional<Framework> target;
  if (!f.target.empty()) {
    target = trainer(f.target);
    if (!target) {
      throw InputError("command line", "--target",
                       "expected megatron, torchtitan or deepspeed, got " + quoted_text(f.target));
    }
  }
  if (const auto exported = trainer(f.export_best)) {
    if (target && *target != *exported) {
      throw UsageError("meshfit search: --target " + f.target + " and --export-best " + f.export_best +
                       " name different trainers");
    }
    target = exported;
  }
  if (!target && vm.count("framework") && !vm["framework"].defaulted()) target = run.profile.framework;
  if (!target) return;
  run.target = target;
  space.policies.on[static_cast<std::size_t>(Policy::trainer_target)] = true;
  if (*target == Framework::deepspeed && space.pins.recompute.empty()) {
    space.pins.recompute = {Recompute::none, Recompute::full};
  }
}

// The search file's pins, policies, headroom and top, under the flags given (flags win).
void apply_search_file(const SearchFile& file, const po::variables_map& vm, SearchFlags& f, SearchSpace& space) {
  space.pins = file.pins;
  for (const auto& [policy, on] : file.policies) space.policies.on[static_cast<std::size_t>(policy)] = on;
  if (file.headroom && vm["headroom"].defaulted()) f.cluster.headroom = *file.headroom;
  if (file.top && vm["top"].defaulted()) f.top = static_cast<std::int64_t>(*file.top);
  f.dedupe_ties = f.dedupe_ties || file.dedupe_ties;
}

// The search's options from the flags: its passes, headroom, interrupt flag and progress line.
SearchOptions search_options(const SearchFlags& f, const Cluster& cluster) {
  SearchOptions options;
  options.top_k = static_cast<std::size_t>(f.top);
  // --no-prune: every valid strategy estimated (the enumeration still skips decided subtrees,
  // which only counts); --prune-off: the passes named switched off (pruning_passes.hpp).
  options.passes = f.no_prune ? PruningPasses::none().with(PruningPass::rule_subtrees) : PruningPasses::all();
  try {
    options.passes = switch_off(options.passes, f.prune_off);
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("--prune-off: ") + e.what());
  }
  options.dedupe_ties = f.dedupe_ties;
  options.headroom_bytes = parse_headroom(f.cluster.headroom, cluster.device.capacity);
  options.stop = &InterruptScope::requested();
  options.collect_cloud = !f.plot_file.empty() || !f.report_file.empty();
  // A progress line on a terminal only, once the search runs longer than about a second.
  if (isatty(STDERR_FILENO) != 0 && !f.quiet) {
    const auto started = std::chrono::steady_clock::now();
    auto progress_mutex = std::make_shared<std::mutex>();
    options.progress = [started, progress_mutex](std::size_t done, std::size_t total) {
      if (std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) return;
      const std::lock_guard<std::mutex> lock(*progress_mutex);
      std::fprintf(stderr, "\rsearching: %zu/%zu parallel layouts", done, total);
      if (done == total) std::fprintf(stderr, "\n");
    };
  }
  return options;
}

// --devices with a list: the inverse query, which device counts can train this at all?
int search_device_counts(const SearchFlags& f, OutputFormat format, const std::vector<std::int64_t>& counts,
                         SearchSpace& space, Cluster& cluster, SearchOptions options, std::ostream& out,
                         std::ostream& err) {
  SearchWorkspace workspace;  // kept across the counts' searches
  options.workspace = &workspace;
  CountResults c;
  c.counts = counts;
  c.listed = counts.size();
  for (std::int64_t n : counts) {
    cluster.devices = n;
    SearchResult r;
    try {
      space.check_pins();
      r = run_search(space, options);
      if (f.verify || verify_requested_by_environment()) report_verify_differences(space, r, options.headroom_bytes);
    } catch (const std::invalid_argument&) {
      r.budget = cluster.device.capacity - options.headroom_bytes;  // pins outside this count's domain
    }
    c.results.emplace_back(n, std::move(r));
    if (InterruptScope::requested()) break;
  }
  // Cut short: the counts after the last one searched were never tried, and the last one's
  // search may be partial, so the smallest fitting count found is not known to be the smallest.
  c.interrupted = InterruptScope::requested().load();
  for (const auto& [n, r] : c.results) {
    if (r.fitting > 0) {
      c.smallest = n;
      break;
    }
  }
  const SearchReport settings{
      *space.model, cluster, *space.run, SearchResult{}, options.headroom_bytes, tight_fraction(f), f.timings,
      f.wide,       {},      {}};
  if (format == OutputFormat::json) {
    write_counts_json(c, settings, out);
  } else if (format == OutputFormat::csv) {
    write_counts_csv(c, settings, out);
  } else {
    write_counts_table(c, settings, out);
  }
  if (c.interrupted) {
    err << "meshfit search: interrupted\n";
    return kExitInterrupted;
  }
  return c.smallest ? 0 : 1;
}

// The fastest fitting strategy in a trainer's format; a trainer's refusal is returned in `error`.
std::optional<TrainerConfig> export_fastest(std::optional<TrainerFormat> format, const Model& model, const Run& run,
                                            const SearchResult& result, std::string& error) {
  if (!format || result.front.empty()) return std::nullopt;
  try {
    TrainerConfig exported = export_strategy(*format, model, run, result.front.front().strategy);
    if (result.interrupted) exported.text = mark_interrupted(*format, exported.text);
    return exported;
  } catch (const ExportError& e) {
    error = e.what();
    return std::nullopt;
  }
}

// The search's JSON with the export as one more field at the end of the object.
void write_json_with_export(const SearchReport& rep, const std::optional<TrainerConfig>& exported,
                            const std::string& format_name, std::ostream& out) {
  std::ostringstream json;
  write_search_json(rep, json);
  std::string text = json.str();
  if (exported) {
    std::ostringstream field;
    JsonWriter j(field);
    j.begin_object()
        .key("export")
        .begin_object()
        .field("format", format_name)
        .field("text", exported->text)
        .end_object()
        .end_object();
    const std::string fs = field.str();
    text = text.substr(0, text.rfind('}')) + "," + fs.substr(1);
  }
  out << text;
}

// One device count: the search, its files (plot, report, export) and its output; the exit code.
int search_one(const SearchFlags& f, OutputFormat format, std::optional<TrainerFormat> export_format,
               const SearchSpace& space, const SearchOptions& options, std::ostream& out, std::ostream& err) {
  const Model& model = *space.model;
  const Run& run = *space.run;
  const Cluster& cluster = *space.cluster;
  const SearchResult result = run_search(space, options);
  if (f.verify || verify_requested_by_environment()) report_verify_differences(space, result, options.headroom_bytes);

  // An error for the trainer is reported, and the exit code says so, but the search's results
  // are still written.
  std::string export_error;
  const std::optional<TrainerConfig> exported = export_fastest(export_format, model, run, result, export_error);
  const std::string title = model.name + " on " + std::to_string(cluster.devices) + " x " + cluster.device.name +
                            ", seq " + std::to_string(run.seq) + ", global batch " + std::to_string(run.global_batch);
  if (!f.plot_file.empty() || !f.report_file.empty()) {
    const std::string svg = front_chart_svg(result, title);
    if (!f.plot_file.empty()) write_file_atomically(f.plot_file, svg, "--plot");
    if (!f.report_file.empty()) {
      std::vector<FrontDetail> details;
      for (const auto& x : result.front) {
        details.push_back({estimate_memory(model, run, cluster, x.strategy, options.headroom_bytes),
                           estimate_step_time(model, run, cluster, x.strategy)});
      }
      write_file_atomically(f.report_file, html_report(model, cluster, run, result, details, svg), "--report");
    }
  }
  if (exported && !f.export_out.empty()) write_file_atomically(f.export_out, exported->text, "--export-out");

  SearchReport rep{model, cluster, run, result, options.headroom_bytes, tight_fraction(f), f.timings, f.wide, {}, {}};
  set_training_cost(f, rep);
  if (format == OutputFormat::json) {
    write_json_with_export(rep, f.export_out.empty() ? exported : std::nullopt, f.export_best, out);
  } else if (format == OutputFormat::csv) {
    write_search_csv(rep, out);
  } else {
    write_search_table(rep, out);
    if (exported && f.export_out.empty())
      out << "\n" << f.export_best << " configuration of the fastest:\n" << exported->text;
  }
  if (exported && !f.quiet) {
    for (const auto& n : exported->notes) err << "meshfit search: note: " << n << '\n';
  }
  if (!export_error.empty()) {
    err << "meshfit search: error: --export-best: " << export_error << '\n';
    return 2;
  }
  if (result.interrupted) {
    err << "meshfit search: interrupted: the results cover only the part of the space searched\n";
    return kExitInterrupted;
  }
  if (result.fitting == 0) {
    err << "meshfit search: nothing fits in " << fixed(result.budget / kGiB, 2) << " GiB per device";
    if (result.closest) {
      err << "; the closest valid strategy needs " << fixed(result.closest->peak_bytes / kGiB, 2)
          << " GiB: " << strategy_to_string(result.closest->strategy);
    }
    err << '\n';
    // Offload is searched only when asked for (search_space.hpp): say so where it could help.
    if (space.pins.offload.empty() && cluster.device.has_host()) {
      err << "meshfit search: offload was not searched; --offload none,optimizer,params adds it (host memory as a "
             "second budget)\n";
    }
    return 1;
  }
  return 0;
}

}  // namespace

int command_search(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  SearchFlags f;
  const po::options_description desc = search_description(f);
  const auto parsed = parse_or_help("search", args, desc, f.common, out);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const OutputFormat format = parse_format(f.common.format, {"table", "json", "csv"});
  check_flag_range("--top", static_cast<double>(f.top), 1, kMaxTop);
  check_flag_range("--threads", static_cast<double>(f.threads), 0, kMaxThreads);
  // --sapp-nd-config: the file's model, device, device count (unless --devices), sequence, batch
  // and run; its parallel layout is not pinned (the search explores every strategy).
  std::optional<SappNdInputs> sapp;
  if (!f.cluster.sapp_nd_config.empty()) {
    sapp = load_sapp_nd_inputs("search", vm, f.cluster, f.run,
                               {"model", "seq", "global-batch", "precision", "grad-bytes"}, false);
    if (!vm.count("devices")) f.cluster.devices = std::to_string(sapp->config.devices);
  } else {
    for (const char* required : {"model", "device", "devices"}) {
      if (!vm.count(required))
        throw UsageError(std::string("meshfit search: --") + required + " is required\nTry 'meshfit search --help'.");
    }
    collect_run_flags(vm, f.run);
  }
  const Model model = sapp ? sapp->model : load_model(f.cluster.model);
  const std::vector<std::int64_t> counts = device_counts(f.cluster);
  Cluster cluster =
      sapp ? Cluster{sapp->cluster.device, counts.front()} : make_cluster(f.cluster.device, counts.front());
  std::optional<SearchFile> file;
  if (!f.search_file.empty()) file = load_search_file(f.search_file);
  Run run = sapp ? sapp->run : make_run(f.run, true);
  if (file && file->run_options.IsMap()) {
    apply_run_options(file->run_options, file->source, run, "run_options");
    // --run-options on the command line wins over the search file's.
    if (f.run.run_options_file)
      apply_run_options(load_yaml_file(*f.run.run_options_file), *f.run.run_options_file, run);
  }

  SearchSpace space;
  space.model = &model;
  space.run = &run;
  space.cluster = &cluster;
  if (file) apply_search_file(*file, vm, f, space);
  apply_pin_flags(f.pins, space.pins, space.policies);
  apply_target(f, vm, run, space);
  apply_fit_margin(run, model, cluster, parse_fit_margin(f.run.fit_margin));
  resolve_device_facts(run, cluster.device);
  if (counts.size() == 1) {
    try {
      space.check_pins();
    } catch (const std::invalid_argument& e) {
      throw InputError(e.what());
    }
  }

  const InterruptScope interrupt;
  const SearchOptions options = search_options(f, cluster);
  std::optional<tbb::global_control> limit;
  if (f.threads > 0) limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(f.threads));
  std::optional<TrainerFormat> export_format;
  if (!f.export_best.empty()) {
    export_format = trainer_format_by_name(f.export_best);
    if (!export_format)
      throw InputError("command line", "--export-best",
                       std::string("one of ") + trainer_format_names() + ", got " + quoted_text(f.export_best));
  }
  if (counts.size() > 1 && (!f.plot_file.empty() || !f.report_file.empty() || export_format)) {
    throw UsageError("meshfit search: --plot, --report and --export-best take a single device count");
  }
  if (format == OutputFormat::csv && export_format && f.export_out.empty()) {
    throw UsageError("meshfit search: with --format csv, --export-best needs --export-out FILE");
  }
  check_distinct_outputs({{"--plot", f.plot_file}, {"--report", f.report_file}, {"--export-out", f.export_out}});
  if (counts.size() > 1) return search_device_counts(f, format, counts, space, cluster, options, out, err);
  return search_one(f, format, export_format, space, options, out, err);
}

}  // namespace meshfit
