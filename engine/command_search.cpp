// `meshfit search`: every strategy for a cluster, scored in parallel, the Pareto-feasible ones out
// (docs/spec/cli.md, search-and-time.md §6).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>

#include <tbb/global_control.h>

#include "engine/atomic_file.hpp"
#include "engine/cli_options.hpp"
#include "engine/commands.hpp"
#include "engine/device_config.hpp"
#include "engine/front_chart_svg.hpp"
#include "engine/html_report.hpp"
#include "engine/input_error.hpp"
#include "engine/interrupt.hpp"
#include "engine/utf8_text.hpp"
#include "engine/json_writer.hpp"
#include "engine/memory_terms.hpp"
#include "engine/model_config.hpp"
#include "engine/run_options_config.hpp"
#include "engine/search_file.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"
#include "engine/trainer_export.hpp"
#include "engine/yaml_fields.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "search/search_verifier.hpp"
#include "search/search_workspace.hpp"
#include "search/strategy_search.hpp"

namespace meshfit {

namespace {

// "8", "1,2,4": a list of positive integers for a pinned dimension.
std::vector<std::int64_t> int_list(const std::string& flag, const std::string& text, std::int64_t min = 1) {
  std::vector<std::int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto v = parse_integer(item);
    if (!v || *v < min)
      throw InputError(
          "command line", flag,
          "expected a comma-separated list of integers >= " + std::to_string(min) + ", got " + quoted_text(text));
    out.push_back(*v);
  }
  return out;
}

template <class T>
std::vector<T> name_list(const std::string& flag, const std::string& text,
                         const std::vector<std::pair<std::string, T>>& names) {
  std::vector<T> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto it = std::find_if(names.begin(), names.end(), [&](const auto& p) { return p.first == item; });
    if (it == names.end()) {
      std::string all;
      for (const auto& p : names) all += (all.empty() ? "" : ", ") + p.first;
      throw InputError("command line", flag, "expected one or more of " + all + ", got " + quoted_text(item));
    }
    out.push_back(it->second);
  }
  return out;
}

// The verify mode: a reported figure the plain estimators do not reproduce is a bug (exit 3).
void report_verify_differences(const SearchSpace& space, const SearchResult& r, double headroom) {
  const auto diffs = verify_reported(space, r, headroom);
  if (diffs.empty()) return;
  std::string text = "verify: " + std::to_string(diffs.size()) + " reported strategies differ from a fresh estimate:";
  for (const auto& d : diffs) text += "\n  " + d.where + " " + strategy_to_string(d.strategy) + ": " + d.what;
  throw std::logic_error(text);
}

void write_record_json(JsonWriter& j, const ScoredStrategy& x) {
  j.begin_object().key("strategy");
  write_strategy_json(j, x.strategy);
  j.field("peak_memory_gib", x.peak_bytes / kGiB)
      .field("peak_stage", x.peak_stage)
      .field("step_time_s", x.step_s)
      .field("tokens_per_sec_per_device", x.tokens_per_sec_per_device)
      .field("mfu", x.mfu);
  j.end_object();
}

void write_json(const SearchResult& r, std::ostream& out) {
  JsonWriter j(out);
  j.begin_object().field("budget_gib", r.budget / kGiB);
  j.key("front").begin_array();
  for (const auto& x : r.front) write_record_json(j, x);
  j.end_array().key("top").begin_array();
  for (const auto& x : r.top) write_record_json(j, x);
  j.end_array();
  j.key("counts")
      .begin_object()
      .field("enumerated", r.enumerated)
      .field("valid", r.valid)
      .field("fitting", r.fitting)
      .field("front", static_cast<std::int64_t>(r.front.size()))
      .end_object();
  j.key("rejected_by").begin_object();
  for (std::size_t i = 0; i < kRuleSlots; ++i) {
    if (r.histogram[i] > 0) j.field(slot_name(i), r.histogram[i]);
  }
  j.end_object();
  j.field("interrupted", r.interrupted).field("seconds", r.seconds).end_object();
  out << '\n';
}

void write_csv(const SearchResult& r, std::ostream& out) {
  // A comment line before the header, so that no reader takes a partial result for a whole one.
  if (r.interrupted) out << "# INTERRUPTED: the rows below cover only the part of the space searched\n";
  out << "set,strategy,peak_memory_gib,peak_stage,step_time_s,tokens_per_sec_per_device,mfu\n";
  auto row = [&](const char* set, const ScoredStrategy& x) {
    out << set << ",\"" << strategy_to_string(x.strategy) << "\"," << fixed(x.peak_bytes / kGiB, 4) << ','
        << x.peak_stage << ',' << fixed(x.step_s, 6) << ',' << fixed(x.tokens_per_sec_per_device, 2) << ','
        << fixed(x.mfu, 4) << '\n';
  };
  for (const auto& x : r.front) row("front", x);
  for (const auto& x : r.top) row("top", x);
}

void write_records(const std::vector<ScoredStrategy>& xs, bool flag_dominated, std::ostream& out) {
  TextTable t;
  t.row({"strategy", "step s", "peak GiB", "stage", "tok/s/dev", "MFU", ""});
  for (const auto& x : xs) {
    t.row({strategy_to_string(x.strategy), fixed(x.step_s, 3), fixed(x.peak_bytes / kGiB, 2),
           std::to_string(x.peak_stage), fixed(x.tokens_per_sec_per_device, 0), fixed(100 * x.mfu, 1) + "%",
           flag_dominated && x.dominated ? "dominated" : ""});
  }
  t.print(out, "  ");
}

void write_table(const Model& m, const Cluster& c, const Run& run, const SearchResult& r, std::ostream& out) {
  out << "search " << printable(m.name) << " on " << c.devices << " x " << printable(c.device.name) << ", seq "
      << run.seq << ", global batch " << run.global_batch << "; budget " << fixed(r.budget / kGiB, 2)
      << " GiB per device\n";
  if (r.interrupted) out << "INTERRUPTED: the results below cover only the part of the space searched\n";
  out << "\nPareto front (" << r.front.size() << "), fastest first:\n";
  write_records(r.front, false, out);
  out << "\ntop " << r.top.size() << " fastest fitting:\n";
  write_records(r.top, true, out);
  out << "\nenumerated " << with_commas(r.enumerated) << ", valid " << with_commas(r.valid) << ", fitting "
      << with_commas(r.fitting) << ", on the front " << r.front.size() << "; " << fixed(r.seconds, 2) << " s\n";
  std::vector<std::pair<std::int64_t, std::size_t>> rules;
  for (std::size_t i = 0; i < kRuleSlots; ++i) {
    if (r.histogram[i] > 0) rules.emplace_back(r.histogram[i], i);
  }
  std::sort(rules.begin(), rules.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  out << "rejected by:";
  for (const auto& [n, i] : rules) out << "  " << slot_name(i) << " " << with_commas(n);
  out << '\n';
}

}  // namespace

int command_search(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CommonFlags common;
  ClusterFlags cluster_flags;
  RunFlags run_flags;
  std::string tp, cp, pp, vpp, ep, etp, zero, shard_group, mbs, sp, cp_algo, schedule, recompute, policies;
  std::string plot_file, report_file, export_best, export_out, search_file;
  std::int64_t top = 10, threads = 0;
  std::string prune_off;
  bool no_prune = false, dedupe_ties = false, verify = false;
  po::options_description desc(
      "Usage: meshfit search --model M --device D --devices N --seq S --global-batch B [pins] [options]\n\n"
      "Enumerates every valid strategy, estimates memory and step time, and prints the Pareto front\n"
      "(peak memory vs step time) of those that fit, the fastest ones, and counts. Exit 0 when\n"
      "something fits, 1 when nothing does, 2 on bad input.\nOptions");
  add_cluster_options(desc, cluster_flags);
  desc.add_options()("tp", po::value(&tp), "pin tensor parallelism (list: 4,8)")(
      "cp", po::value(&cp), "pin context parallelism")("pp", po::value(&pp), "pin pipeline stages")(
      "vpp", po::value(&vpp), "pin model chunks per pipeline rank")("ep", po::value(&ep), "pin expert parallelism")(
      "etp", po::value(&etp), "pin expert tensor parallelism")("zero", po::value(&zero), "pin ZeRO stages (0,1,2,3)")(
      "shard-group", po::value(&shard_group), "pin ZeRO shard groups")("mbs", po::value(&mbs), "pin micro-batch sizes")(
      "sp", po::value(&sp), "pin sequence parallelism: true, false or both")("cp-algo", po::value(&cp_algo),
                                                                             "ring, ulysses, hybrid, allgather")(
      "schedule", po::value(&schedule), "1f1b, interleaved_1f1b, gpipe, zb_h1, dualpipev")(
      "recompute", po::value(&recompute), "none, selective, full")("policies", po::value(&policies),
                                                                   "switch policies: tp_in_node=off,even_split=on,...")(
      "search-file", po::value(&search_file),
      "YAML of pins (auto, a value or a list per dimension), policies, "
      "headroom, top and run_options; flags given here win")(
      "top", po::value(&top)->default_value(10), "how many of the fastest fitting strategies to list (1 to 10,000)")(
      "threads", po::value(&threads)->default_value(0), "worker threads (default 0: all cores; at most 1,024)")(
      "no-prune", po::bool_switch(&no_prune), "estimate every valid strategy (no micro-batch pruning)")(
      "prune-off", po::value(&prune_off),
      "switch the named pruning passes off (list; the output does not change, only the time): rule_subtrees, "
      "weighted_vpp_tails, micro_batch_bisection, micro_batch_overflow, zero_setting_overflow, dominance_floor, "
      "top_k_floor")("dedupe-ties", po::bool_switch(&dedupe_ties),
                     "keep one strategy (the first by key) per exact tie on the front")(
      "verify", po::bool_switch(&verify),
      "re-estimate every reported strategy from scratch and fail (exit 3) on any "
      "difference from the search's figures (also MESHFIT_VERIFY=1)")(
      "plot", po::value(&plot_file), "write an SVG chart of the search: fitting strategies, the front, the budget")(
      "report", po::value(&report_file), "write a self-contained HTML report: inputs, front, chart, stage memory")(
      "export-best", po::value(&export_best),
      "the fastest fitting strategy for a trainer: megatron, torchtitan, deepspeed or hyperparallel")(
      "export-out", po::value(&export_out),
      "write --export-best's output to FILE (default: after the results; "
      "with --format json, as its \"export\" field)");
  add_run_options(desc, run_flags);
  desc.add_options()("format", po::value(&common.format)->default_value("table"), "table, json or csv")(
      "help,h", po::bool_switch(&common.help), "show this help");
  const auto parsed = parse_or_help("search", args, desc, common, out);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const OutputFormat format = parse_format(common.format, {"table", "json", "csv"});
  check_flag_range("--top", static_cast<double>(top), 1, kMaxTop);
  check_flag_range("--threads", static_cast<double>(threads), 0, kMaxThreads);
  for (const char* required : {"model", "device", "devices"}) {
    if (!vm.count(required))
      throw UsageError(std::string("meshfit search: --") + required + " is required\nTry 'meshfit search --help'.");
  }
  collect_run_flags(vm, run_flags);
  const Model model = load_model(cluster_flags.model);
  const std::vector<std::int64_t> counts = device_counts(cluster_flags);
  Cluster cluster = make_cluster(cluster_flags.device, counts.front());
  std::optional<SearchFile> file;
  if (!search_file.empty()) file = load_search_file(search_file);
  Run run = make_run(run_flags, true);
  if (file && file->run_options.IsMap()) {
    apply_run_options(file->run_options, file->source, run, "run_options");
    // --run-options on the command line wins over the search file's.
    if (run_flags.run_options_file)
      apply_run_options(load_yaml_file(*run_flags.run_options_file), *run_flags.run_options_file, run);
  }

  SearchSpace space;
  space.model = &model;
  space.run = &run;
  space.cluster = &cluster;
  Pins& p = space.pins;
  if (file) {
    p = file->pins;
    for (const auto& [policy, on] : file->policies) space.policies.on[static_cast<std::size_t>(policy)] = on;
    if (file->headroom && vm["headroom"].defaulted()) cluster_flags.headroom = *file->headroom;
    if (file->top && vm["top"].defaulted()) top = static_cast<std::int64_t>(*file->top);
    dedupe_ties = dedupe_ties || file->dedupe_ties;
  }
  if (!tp.empty()) p.tp = int_list("--tp", tp);
  if (!cp.empty()) p.cp = int_list("--cp", cp);
  if (!pp.empty()) p.pp = int_list("--pp", pp);
  if (!vpp.empty()) p.vpp = int_list("--vpp", vpp);
  if (!ep.empty()) p.ep = int_list("--ep", ep);
  if (!etp.empty()) p.etp = int_list("--etp", etp);
  if (!zero.empty()) p.zero = int_list("--zero", zero, 0);
  if (!shard_group.empty()) p.shard_group = int_list("--shard-group", shard_group);
  if (!mbs.empty()) p.micro_batch = int_list("--mbs", mbs);
  if (sp == "both") p.sp.clear();
  if (!sp.empty() && sp != "both") p.sp = name_list<bool>("--sp", sp, {{"true", true}, {"false", false}});
  if (!cp_algo.empty()) {
    p.cp_algo = name_list<CpAlgo>("--cp-algo", cp_algo,
                                  {{"ring", CpAlgo::ring},
                                   {"ulysses", CpAlgo::ulysses},
                                   {"hybrid", CpAlgo::hybrid},
                                   {"allgather", CpAlgo::allgather}});
  }
  if (!schedule.empty()) {
    p.schedule = name_list<Schedule>("--schedule", schedule,
                                     {{"1f1b", Schedule::one_f_one_b},
                                      {"interleaved_1f1b", Schedule::interleaved_1f1b},
                                      {"gpipe", Schedule::gpipe},
                                      {"zb_h1", Schedule::zb_h1},
                                      {"dualpipev", Schedule::dualpipev}});
  }
  if (!recompute.empty()) {
    p.recompute = name_list<Recompute>(
        "--recompute", recompute,
        {{"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}});
  }
  if (!policies.empty()) {
    std::stringstream in(policies);
    std::string item;
    while (std::getline(in, item, ',')) {
      const auto eq = item.find('=');
      const auto pol = policy_by_name(item.substr(0, eq));
      const std::string state = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (!pol || (state != "on" && state != "off")) {
        throw InputError("command line", "--policies",
                         "expected name=on|off with names tp_in_node, tpcp_in_node, ep_in_node, powers_of_two, "
                         "sp_with_tp, even_split, m_ge_pp, kv_heads_divisible, ulysses_kv_divisible, cp_min_tokens, "
                         "hsdp_candidates, full_recompute_all, megatron_target; got " +
                             quoted_text(item));
      }
      space.policies.on[static_cast<std::size_t>(*pol)] = state == "on";
    }
  }
  if (counts.size() == 1) {
    try {
      space.check_pins();
    } catch (const std::invalid_argument& e) {
      throw InputError(e.what());
    }
  }

  SearchOptions options;
  options.top_k = static_cast<std::size_t>(top);
  // --no-prune: every valid strategy estimated (the enumeration still skips decided subtrees,
  // which only counts); --prune-off: the passes named switched off (pruning_passes.hpp).
  options.passes = no_prune ? PruningPasses::none().with(PruningPass::rule_subtrees) : PruningPasses::all();
  try {
    options.passes = switch_off(options.passes, prune_off);
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("--prune-off: ") + e.what());
  }
  options.dedupe_ties = dedupe_ties;
  options.headroom_bytes = parse_headroom(cluster_flags.headroom, cluster.device.capacity);
  const InterruptScope interrupt;
  options.stop = &InterruptScope::requested();
  // A progress bar on a terminal only, once the search runs longer than about a second.
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto started = std::chrono::steady_clock::now();
  std::mutex progress_mutex;
  if (tty) {
    options.progress = [&](std::size_t done, std::size_t total) {
      if (std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) return;
      std::lock_guard<std::mutex> lock(progress_mutex);
      std::fprintf(stderr, "\rsearching: %zu/%zu parallel layouts", done, total);
      if (done == total) std::fprintf(stderr, "\n");
    };
  }
  std::optional<tbb::global_control> limit;
  if (threads > 0) limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
  std::optional<TrainerFormat> export_format;
  if (!export_best.empty()) {
    export_format = trainer_format_by_name(export_best);
    if (!export_format)
      throw InputError("command line", "--export-best",
                       std::string("one of ") + trainer_format_names() + ", got " + quoted_text(export_best));
  }
  if (counts.size() > 1 && (!plot_file.empty() || !report_file.empty() || export_format)) {
    throw UsageError("meshfit search: --plot, --report and --export-best take a single device count");
  }
  if (format == OutputFormat::csv && export_format && export_out.empty()) {
    throw UsageError("meshfit search: with --format csv, --export-best needs --export-out FILE");
  }
  check_distinct_outputs({{"--plot", plot_file}, {"--report", report_file}, {"--export-out", export_out}});
  options.collect_cloud = !plot_file.empty() || !report_file.empty();
  if (counts.size() > 1) {      // the inverse query: which device counts can train this at all?
    SearchWorkspace workspace;  // kept across the counts' searches
    options.workspace = &workspace;
    std::vector<std::pair<std::int64_t, SearchResult>> results;
    for (std::int64_t n : counts) {
      cluster.devices = n;
      SearchResult r;
      try {
        space.check_pins();
        r = run_search(space, options);
        if (verify || verify_requested_by_environment()) report_verify_differences(space, r, options.headroom_bytes);
      } catch (const std::invalid_argument&) {
        r.budget = cluster.device.capacity - options.headroom_bytes;  // pins outside this count's domain
      }
      results.emplace_back(n, std::move(r));
      if (InterruptScope::requested()) break;
    }
    // Cut short: the counts after the last one searched were never tried, and the last one's
    // search may be partial, so the smallest fitting count found is not known to be the smallest.
    const bool interrupted = InterruptScope::requested().load();
    std::optional<std::int64_t> smallest;
    for (const auto& [n, r] : results) {
      if (r.fitting > 0) {
        smallest = n;
        break;
      }
    }
    if (format == OutputFormat::json) {
      JsonWriter j(out);
      j.begin_object().key("device_counts").begin_array();
      for (const auto& [n, r] : results) {
        j.begin_object()
            .field("devices", n)
            .field("enumerated", r.enumerated)
            .field("valid", r.valid)
            .field("fitting", r.fitting)
            .field("front", static_cast<std::int64_t>(r.front.size()))
            .key("best");
        if (r.top.empty())
          j.null();
        else
          write_record_json(j, r.top.front());
        j.field("interrupted", r.interrupted).field("seconds", r.seconds).end_object();
      }
      j.end_array().key("smallest_fitting_devices");
      if (smallest)
        j.value(*smallest);
      else
        j.null();
      j.field("not_searched", static_cast<std::int64_t>(counts.size() - results.size()));
      j.field("interrupted", interrupted).end_object();
      out << '\n';
    } else {
      out << "search " << printable(model.name) << " on " << printable(cluster.device.name) << ", seq " << run.seq
          << ", global batch " << run.global_batch << ", per device count:\n";
      if (interrupted) {
        out << "INTERRUPTED: " << results.size() << " of " << counts.size() << " device counts searched"
            << (results.back().second.interrupted ? ", the last one only in part" : "") << '\n';
      }
      TextTable t;
      t.row({"devices", "valid", "fitting", "front", "best step s", "peak GiB", "tok/s/dev", "best strategy"});
      for (const auto& [n, r] : results) {
        if (r.top.empty()) {
          t.row({std::to_string(n), with_commas(r.valid), "0", "0", "-", "-", "-",
                 r.interrupted ? "nothing fits in the part searched" : "nothing fits"});
        } else {
          const ScoredStrategy& b = r.top.front();
          t.row({std::to_string(n), with_commas(r.valid), with_commas(r.fitting), std::to_string(r.front.size()),
                 fixed(b.step_s, 3), fixed(b.peak_bytes / kGiB, 2), fixed(b.tokens_per_sec_per_device, 0),
                 strategy_to_string(b.strategy)});
        }
      }
      t.print(out, "  ");
      out << (smallest ? std::string(interrupted ? "smallest device count found (interrupted, not proven smallest)"
                                                 : "smallest device count with a fitting strategy") +
                             ": " + std::to_string(*smallest)
                       : std::string(interrupted ? "no fitting strategy found before the interrupt"
                                                 : "no device count in the list has a fitting strategy"))
          << '\n';
    }
    if (interrupted) {
      err << "meshfit search: interrupted\n";
      return kExitInterrupted;
    }
    return smallest ? 0 : 1;
  }
  const SearchResult result = run_search(space, options);
  if (verify || verify_requested_by_environment()) report_verify_differences(space, result, options.headroom_bytes);

  // The fastest fitting strategy in a trainer's format (an error for the trainer is reported,
  // and the exit code says so, but the search's results are still written).
  std::optional<TrainerConfig> exported;
  std::string export_error;
  if (export_format && !result.front.empty()) {
    try {
      exported = export_strategy(*export_format, model, run, result.front.front().strategy);
      if (result.interrupted) exported->text = mark_interrupted(*export_format, exported->text);
    } catch (const ExportError& e) {
      export_error = e.what();
    }
  }
  const std::string title = model.name + " on " + std::to_string(cluster.devices) + " x " + cluster.device.name +
                            ", seq " + std::to_string(run.seq) + ", global batch " + std::to_string(run.global_batch);
  if (!plot_file.empty() || !report_file.empty()) {
    const std::string svg = front_chart_svg(result, title);
    if (!plot_file.empty()) write_file_atomically(plot_file, svg, "--plot");
    if (!report_file.empty()) {
      MemoryReport chosen;
      if (!result.front.empty())
        chosen = estimate_memory(model, run, cluster, result.front.front().strategy, options.headroom_bytes);
      write_file_atomically(report_file, html_report(model, cluster, run, result, chosen, svg), "--report");
    }
  }
  if (exported && !export_out.empty()) write_file_atomically(export_out, exported->text, "--export-out");

  if (format == OutputFormat::json) {
    std::ostringstream json;
    write_json(result, json);
    std::string text = json.str();
    if (exported && export_out.empty()) {  // one more field at the end of the object
      std::ostringstream field;
      JsonWriter j(field);
      j.begin_object()
          .key("export")
          .begin_object()
          .field("format", export_best)
          .field("text", exported->text)
          .end_object()
          .end_object();
      const std::string f = field.str();
      text = text.substr(0, text.rfind('}')) + "," + f.substr(1);
    }
    out << text;
  } else if (format == OutputFormat::csv) {
    write_csv(result, out);
  } else {
    write_table(model, cluster, run, result, out);
    if (exported && export_out.empty())
      out << "\n" << export_best << " configuration of the fastest:\n" << exported->text;
  }
  if (exported) {
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
    return 1;
  }
  return 0;
}

}  // namespace meshfit
