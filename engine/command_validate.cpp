// `meshfit validate CASES.yaml`: estimate measured runs and compare like with like
// (docs/spec/cli.md; memory-model.md §11 "Comparing with measurements").
#include <algorithm>
#include <iterator>
#include <cmath>
#include <optional>

#include "engine/atomic_file.hpp"
#include "engine/cli_options.hpp"
#include "engine/commands.hpp"
#include "engine/input_error.hpp"
#include "engine/json_writer.hpp"
#include "engine/memory_terms.hpp"
#include "engine/time_terms.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "search/evaluator/step_time_evaluator.hpp"
#include "engine/text_format.hpp"
#include "engine/validation_summary.hpp"
#include "estimators/overheads.hpp"

namespace meshfit {

namespace {

void write_groups_json(JsonWriter& j, const std::vector<Group>& groups) {
  j.key("groups").begin_array();
  for (const auto& g : groups) {
    j.begin_object()
        .field("group", g.key)
        .field("cases", g.cases)
        .field("memory_cases", static_cast<std::int64_t>(g.memory.size()))
        .field("median_abs_error", median(g.memory))
        .field("throughput_cases", static_cast<std::int64_t>(g.throughput.size()))
        .field("throughput_median_abs_error", median(g.throughput))
        .end_object();
  }
  j.end_array();
}

void write_groups_table(const std::vector<Group>& groups, const std::string& by, std::ostream& out) {
  TextTable t;
  t.row({by, "cases", "memory", "median |error|", "throughput", "median |error|"});
  for (const auto& g : groups) {
    t.row({g.key.empty() ? "-" : g.key, std::to_string(g.cases), std::to_string(g.memory.size()),
           g.memory.empty() ? "-" : fixed(100 * median(g.memory), 1) + "%", std::to_string(g.throughput.size()),
           g.throughput.empty() ? "-" : fixed(100 * median(g.throughput), 1) + "%"});
  }
  out << "\nper " << by << ":\n";
  t.print(out, "  ");
}

void write_validate_json(const Summary& s, const std::vector<UnestimatedCase>& unestimated, const std::string& group_by,
                         std::ostream& out) {
  JsonWriter j(out);
  j.begin_object().key("cases").begin_array();
  for (const auto& r : s.rows) {
    j.begin_object().field("id", r.c->id).field("estimate_gib", r.estimate_gib);
    j.field("measured_gib", r.c->measured_gib);
    j.field("metric", to_string(r.c->metric));
    j.field("error", r.error);
    j.field("stage", r.stage);
    j.field("estimate_tokens_per_sec_per_device", r.tokens_per_sec);
    j.field("measured_tokens_per_sec_per_device", r.c->measured_tokens_per_sec);
    j.field("tokens_error", r.tokens_error);
    j.field("measured_implied_hfu", r.measured_hfu);
    j.key("defaults").begin_array();
    for (const auto& d : r.c->defaults_taken) j.value(d);
    j.end_array().end_object();
  }
  j.end_array();
  j.key("summary")
      .begin_object()
      .field("cases", static_cast<std::int64_t>(s.rows.size()))
      .field("memory_cases", static_cast<std::int64_t>(s.memory.abs_errors.size()))
      .field("median_abs_error", s.memory.med)
      .field("within_10_percent", static_cast<std::int64_t>(s.within));
  if (s.memory.under) {
    j.field("worst_under_id", s.memory.under->c->id)
        .field("worst_under_error", *s.memory.under->error)
        .field("worst_over_id", s.memory.over->c->id)
        .field("worst_over_error", *s.memory.over->error);
  }
  j.field("confident_memory_cases", static_cast<std::int64_t>(s.confident.abs_errors.size()));
  if (s.confident.under) {
    j.field("confident_median_abs_error", s.confident.med)
        .field("confident_worst_under_id", s.confident.under->c->id)
        .field("confident_worst_under_error", *s.confident.under->error)
        .field("confident_worst_over_id", s.confident.over->c->id)
        .field("confident_worst_over_error", *s.confident.over->error);
  }
  j.key("not_fitting").begin_array();
  for (const Row* r : s.not_fitting) j.value(r->c->id);
  j.end_array();
  j.field("memory_ranking_pairs", s.memory_rank.pairs).field("memory_ranking_agreement", s.memory_rank.share());
  j.field("throughput_ranking_pairs", s.tokens_rank.pairs).field("throughput_ranking_agreement", s.tokens_rank.share());
  const Coverage cov = held_out_coverage(s);
  j.field("memory_band_cases", cov.memory_cases).field("memory_inside_band", cov.memory_in);
  j.field("step_time_band_cases", cov.time_cases).field("step_time_inside_band", cov.time_in);
  const Coverage shipped = band_coverage(residuals_of(s), bundled_residuals());
  j.field("memory_shipped_band_cases", shipped.memory_cases).field("memory_inside_shipped_band", shipped.memory_in);
  j.field("step_time_shipped_band_cases", shipped.time_cases).field("step_time_inside_shipped_band", shipped.time_in);
  j.key("implausible").begin_array();
  for (const Row* r : s.implausible) j.value(r->c->id);
  j.end_array();
  j.field("throughput_cases", static_cast<std::int64_t>(s.tokens_abs.size()));
  if (!s.tokens_abs.empty()) {
    j.field("throughput_median_abs_error", s.tokens_med)
        .field("throughput_worst_under_id", s.tok_under->c->id)
        .field("throughput_worst_under_error", *s.tok_under->tokens_error)
        .field("throughput_worst_over_id", s.tok_over->c->id)
        .field("throughput_worst_over_error", *s.tok_over->tokens_error);
  }
  j.end_object();
  if (!group_by.empty()) write_groups_json(j, groups_of(s, group_by));
  j.key("not_estimated").begin_array();
  for (const auto& u : unestimated) {
    j.begin_object().field("id", u.id);
    if (!u.field.empty()) j.field("not_stated", u.field);
    j.field("reason", u.reason).end_object();
  }
  j.end_array().end_object();
  out << '\n';
}

void write_validate_table(const Summary& s, const std::vector<UnestimatedCase>& unestimated,
                          const std::string& group_by, std::ostream& out) {
  TextTable t;
  auto percent = [](double e) { return (e >= 0 ? "+" : "") + fixed(100 * e, 1) + "%"; };
  t.row({"case", "metric", "estimate GiB", "measured GiB", "error", "stage", "tok/s est", "tok/s meas", "error"});
  for (const auto& r : s.rows) {
    const bool has_tokens = r.c->measured_tokens_per_sec.has_value();
    t.row({r.c->id, to_string(r.c->metric), fixed(r.estimate_gib, 2),
           r.c->measured_gib ? fixed(*r.c->measured_gib, 2) : "-", r.error ? percent(*r.error) : "-",
           std::to_string(r.stage), fixed(r.tokens_per_sec, 0),
           has_tokens ? fixed(*r.c->measured_tokens_per_sec, 0) : "-",
           r.tokens_error ? percent(*r.tokens_error) : "-"});
  }
  t.print(out);
  out << "\n" << s.rows.size() << " cases";
  if (s.memory.abs_errors.size() != s.rows.size()) out << ", " << s.memory.abs_errors.size() << " with memory";
  out << "; median absolute error " << fixed(100 * s.memory.med, 1) << "%; " << s.within << " within 10%\n";
  if (s.memory.under) {
    // Signed as the table prints them ("+3.2%", "-9.9%"): with one case, or every case on one
    // side, the worst s.over-estimate can be an s.under-estimate (it printed "+-24.1%").
    out << "worst under-estimate " << s.memory.under->c->id << " " << percent(*s.memory.under->error)
        << "; worst over-estimate " << s.memory.over->c->id << " " << percent(*s.memory.over->error) << "\n";
  }
  if (s.confident.under && s.confident.abs_errors.size() != s.memory.abs_errors.size()) {
    out << "memory at high and medium confidence (what the gates judge): " << s.confident.abs_errors.size()
        << " cases; median absolute error " << fixed(100 * s.confident.med, 1) << "%; worst under "
        << s.confident.under->c->id << " " << percent(*s.confident.under->error) << "; worst over "
        << s.confident.over->c->id << " " << percent(*s.confident.over->error) << "\n";
  }
  if (!s.tokens_abs.empty()) {
    out << "throughput: " << s.tokens_abs.size() << " cases judged; median absolute error "
        << fixed(100 * s.tokens_med, 1) << "%; worst under " << s.tok_under->c->id << " "
        << percent(*s.tok_under->tokens_error) << "; worst over " << s.tok_over->c->id << " "
        << percent(*s.tok_over->tokens_error) << "\n";
  }
  auto ranking = [](const RankingAgreement& a) {
    return fixed(100 * a.share(), 1) + "% of " + std::to_string(a.pairs) + " pairs";
  };
  out << "ranking within a source (pairs measured over 1% apart, ordered as measured): memory "
      << ranking(s.memory_rank) << ", throughput " << ranking(s.tokens_rank) << "\n";
  const Coverage cov = held_out_coverage(s);
  auto share = [](std::int64_t in, std::int64_t n) {
    return std::to_string(in) + " of " + std::to_string(n) + (n > 0 ? " (" + fixed(100.0 * in / n, 0) + "%)" : "");
  };
  out << "inside their p10-p90 band made without their own source: memory " << share(cov.memory_in, cov.memory_cases)
      << ", step time " << share(cov.time_in, cov.time_cases) << "\n";
  const Coverage shipped = band_coverage(residuals_of(s), bundled_residuals());
  out << "inside the p10-p90 band the tool prints (from its bundled residuals, data/uncertainty/residuals.yaml: "
         "in-sample for the cases they were drawn from): memory "
      << share(shipped.memory_in, shipped.memory_cases) << ", step time " << share(shipped.time_in, shipped.time_cases)
      << "\n";
  out << "runs that trained, estimated not to fit their device: " << s.not_fitting.size();
  for (const Row* r : s.not_fitting) out << " " << r->c->id;
  out << "\n";
  if (!s.implausible.empty()) {
    out << "implausible, " << s.implausible.size()
        << " cases, their throughput not judged (left out of the throughput summary, ranking and bands): the "
           "measured throughput needs more than the device's peak FLOP/s (its FP8 peak for FP8 linears) under the "
           "case's stated shape (implied "
           "hardware FLOP utilisation, recompute included):";
    for (const Row* r : s.implausible) out << " " << r->c->id << " (" << fixed(*r->measured_hfu, 2) << ")";
    out << "\n";
  }
  if (!group_by.empty()) write_groups_table(groups_of(s, group_by), group_by, out);
  if (!unestimated.empty()) {
    out << "not estimated, " << unestimated.size() << " cases (the others are estimated above):\n";
    for (const auto& u : unestimated) out << "  " << u.id << ": " << u.reason << "\n";
  }
}
// --case: the terms behind one case's estimate, to see which mechanism an error comes from.
void write_case_terms(const ValidationCase& c, const Row& r, std::ostream& out) {
  const MemoryReport m = estimate_memory(c.model, c.run, c.cluster, c.strategy);
  const StageMemory& st = m.stages[static_cast<std::size_t>(r.stage)];
  if (m.stages.size() > 1) {
    out << "\nper stage (GiB, " << to_string(c.compared) << (c.first_iteration ? ", first iteration" : "") << "):";
    for (const auto& each : m.stages) out << " " << each.stage << ": " << fixed(compared_bytes(c, each, m) / kGiB, 2);
    out << "\n";
  }
  if (c.first_iteration) {
    out << "\nread after the first iteration: of the terms below, the backward less the optimizer's "
        << fixed(st.optimizer_moments / kGiB, 2) << " GiB of states created at its first step ("
        << fixed((backward_allocated(st) - st.optimizer_moments) / kGiB, 2) << "), or the step phase ("
        << fixed(step_allocated(st) / kGiB, 2) << "), allocated\n";
  }
  out << "\nmemory terms of stage " << r.stage << " (GiB; device total " << fixed(st.device / kGiB, 2) << " of "
      << fixed(m.capacity / kGiB, 2) << "):\n";
  TextTable mt;
  for (const auto& [name, bytes] : stage_terms(st)) {
    if (bytes != 0) mt.row({name, fixed(bytes / kGiB, 2)});
  }
  mt.print(out, "  ");
  out << "  (transient parts: layer " << fixed(st.tr_layer / kGiB, 2) << ", attention " << fixed(st.tr_attn / kGiB, 2)
      << ", logits " << fixed(st.tr_logits / kGiB, 2) << ", FSDP " << fixed(st.tr_fsdp / kGiB, 2) << ", bucket "
      << fixed(st.tr_bucket / kGiB, 2) << ", CP " << fixed(st.tr_cp / kGiB, 2) << ", EP " << fixed(st.tr_ep / kGiB, 2)
      << ")\n";
  const TimeReport t = estimate_step_time(c.model, c.run, c.cluster, c.strategy);
  out << "step-time terms (s; step " << fixed(t.step, 3) << ", MFU " << fixed(100 * t.mfu, 1) << "%):\n";
  TextTable tt;
  for (const auto& [name, s] : time_terms(t)) tt.row({name, fixed(s, 4)});
  tt.print(out, "  ");
}
}  // namespace

int command_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CommonFlags common;
  std::vector<std::string> files;
  double max_median = 0, max_under = 0, max_throughput = 0, min_ranking = 0;
  bool strict = false, require_fit = false;
  std::string group_by, residuals_file, only_case;
  po::options_description desc(
      "Usage: meshfit validate CASES.yaml... [--format table|json] [gates]\n\n"
      "Estimates each measured case (schema: data/validation/README.md) and compares the estimate\n"
      "with the measurement: reserved with reserved (also when the case does not say), allocated\n"
      "with allocated. Prints each case's error and the median absolute error. A case that cannot\n"
      "be estimated is listed with its reason and the others are estimated. Exit 1 when a gate is\n"
      "exceeded, 2 on a file that cannot be read (or, with --strict, a case that cannot be estimated).\nOptions");
  desc.add_options()("cases", po::value(&files)->composing(), "the case files")(
      "max-median-error", po::value(&max_median),
      "gate: the memory median |error| of the high- and medium-confidence cases at most this share (0.05)")(
      "max-under", po::value(&max_under),
      "gate: no high- or medium-confidence memory under-estimate beyond this share (0.10)")(
      "max-throughput-error", po::value(&max_throughput),
      "gate: the throughput median |error| at most this share (0.10)")(
      "min-ranking-agreement", po::value(&min_ranking),
      "gate: the share of same-source pairs ordered as measured, memory and throughput, at least this (0.90)")(
      "require-fit", po::bool_switch(&require_fit),
      "gate: every case, a run that trained, estimated to fit its device (the search's own test)")(
      "strict", po::bool_switch(&strict), "a case that cannot be estimated is an error (exit 2)")(
      "case", po::value(&only_case),
      "estimate only this case (its id), and show its memory terms (the stage compared) and step-time terms")(
      "group-by", po::value(&group_by), "a summary per framework, device, model or source")(
      "write-residuals", po::value(&residuals_file),
      "write each case's measured/estimate ratios (memory, step time) and family to this file: the "
      "uncertainty bands' data (data/uncertainty/residuals.yaml)");
  add_common_options(desc, common);
  po::positional_options_description pos;
  pos.add("cases", -1);
  const auto parsed = parse_or_help("validate", args, desc, common, out, &pos);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const OutputFormat format = parse_format(common.format, {"table", "json"});
  if (files.empty()) throw UsageError("meshfit validate: a case file is required\nTry 'meshfit validate --help'.");
  if (!group_by.empty() && group_by != "framework" && group_by != "device" && group_by != "model" &&
      group_by != "source") {
    throw InputError("command line", "--group-by",
                     "expected framework, device, model or source, got " + quoted_text(group_by));
  }
  for (const char* gate : {"max-median-error", "max-under", "max-throughput-error", "min-ranking-agreement"}) {
    if (vm.count(gate)) check_flag_range(std::string("--") + gate, vm[gate].as<double>(), 0, 10);
  }
  std::vector<UnestimatedCase> unestimated;
  std::vector<ValidationCase> cases;
  for (const auto& file : files) {
    std::vector<ValidationCase> more = load_validation_cases(file, strict ? nullptr : &unestimated);
    cases.insert(cases.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }

  if (!only_case.empty()) {
    const auto keep =
        std::find_if(cases.begin(), cases.end(), [&](const ValidationCase& c) { return c.id == only_case; });
    if (keep == cases.end()) throw InputError("command line", "--case", "no case with id " + quoted_text(only_case));
    cases = {std::move(*keep)};
  }
  Summary summary;
  summarize(cases, summary);
  if (!residuals_file.empty()) {
    std::vector<std::string> sources;
    sources.reserve(files.size());
    for (const auto& f : files) sources.push_back(f.substr(f.find_last_of('/') + 1));
    write_file_atomically(residuals_file, residuals_yaml(residuals_of(summary), sources), "--write-residuals");
  }
  if (format == OutputFormat::json) {
    write_validate_json(summary, unestimated, group_by, out);
  } else {
    write_validate_table(summary, unestimated, group_by, out);
    if (!only_case.empty()) write_case_terms(cases.front(), summary.rows.front(), out);
  }
  // The CI gates (issue 20's targets are the defaults a pipeline would set).
  std::vector<std::string> exceeded;
  const MemoryErrors& gated = summary.confident;
  if (vm.count("max-median-error") && !gated.abs_errors.empty() && gated.med > max_median) {
    exceeded.push_back("memory median |error| " + fixed(100 * gated.med, 1) + "% > " + fixed(100 * max_median, 1) +
                       "%");
  }
  if (vm.count("max-under") && gated.under && *gated.under->error < -max_under) {
    exceeded.push_back("memory under-estimate " + fixed(100 * *gated.under->error, 1) + "% (" + gated.under->c->id +
                       ") beyond -" + fixed(100 * max_under, 1) + "%");
  }
  if (vm.count("max-throughput-error") && !summary.tokens_abs.empty() && summary.tokens_med > max_throughput) {
    exceeded.push_back("throughput median |error| " + fixed(100 * summary.tokens_med, 1) + "% > " +
                       fixed(100 * max_throughput, 1) + "%");
  }
  for (const auto* rank : {&summary.memory_rank, &summary.tokens_rank}) {
    if (vm.count("min-ranking-agreement") && rank->pairs > 0 && rank->share() < min_ranking) {
      exceeded.push_back(std::string(rank == &summary.memory_rank ? "memory" : "throughput") + " ranking agreement " +
                         fixed(100 * rank->share(), 1) + "% < " + fixed(100 * min_ranking, 1) + "%");
    }
  }
  if (require_fit && !summary.not_fitting.empty()) {
    exceeded.push_back(
        std::to_string(summary.not_fitting.size()) +
        " runs that trained estimated not to fit their device (first: " + summary.not_fitting.front()->c->id + ")");
  }
  for (const auto& e : exceeded) err << "meshfit validate: gate exceeded: " << e << '\n';
  return exceeded.empty() ? 0 : 1;
}

}  // namespace meshfit
