// `meshfit estimate`: memory per stage and per term of one strategy (docs/spec/cli.md,
// memory-model.md §13), then the step time and its parts (search-and-time.md §7.10).
#include <algorithm>
#include <iostream>
#include <sstream>

#include "engine/balance_report.hpp"
#include "engine/cli_options.hpp"
#include "engine/commands.hpp"
#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "engine/json_writer.hpp"
#include "engine/memory_terms.hpp"
#include "engine/time_terms.hpp"
#include "engine/uncertainty.hpp"
#include "engine/model_config.hpp"
#include "engine/strategy_inputs.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"
#include "estimators/cp_attention_breakdown.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "search/evaluator/step_time_evaluator.hpp"

namespace meshfit {

namespace {

std::string gib(double bytes) { return fixed(bytes / kGiB, 2); }

// Stages shown as columns: all of them up to 4, else the first, the last and the heaviest.
std::vector<std::size_t> shown_stages(const MemoryReport& r) {
  std::vector<std::size_t> idx;
  const std::size_t n = r.stages.size();
  if (n <= 4) {
    for (std::size_t i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }
  idx = {0, static_cast<std::size_t>(r.peak_stage), n - 1};
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  return idx;
}

void write_time_table(const TimeReport& t, const Band& band, std::ostream& out) {
  out << "\nstep time " << fixed(t.step, 3) << " s (slowest stage " << t.slowest_stage << ", tail on stage "
      << t.tail_stage << "); " << fixed(t.tokens_per_sec_per_device, 1) << " tokens/s per device; MFU "
      << fixed(100 * t.mfu, 1) << "%\n";
  out << "likely " << likely_range(t.step, band, 3) << " s (p10-p90 of measured/estimate, " << band.basis << ")\n";
  TextTable tt;
  for (const auto& [name, seconds] : time_terms(t)) {
    if (seconds == 0) continue;
    tt.row({name, fixed(seconds, 4) + " s", fixed(100 * seconds / t.step, 1) + "%"});
  }
  tt.print(out, "  ");
}

void write_table(const Model& m, const Run& run, const Cluster& c, const Strategy& s, const MemoryReport& r,
                 std::ostream& out) {
  const Band band = memory_band(m, run, c, s);
  out << "model " << m.name << " on " << c.devices << " x " << c.device.name << "\n";
  out << "strategy " << strategy_to_string(s) << "\n\n";
  const auto cols = shown_stages(r);
  TextTable t;
  std::vector<std::string> head{"GiB per device"};
  for (auto i : cols)
    head.push_back("stage " + std::to_string(i) + (static_cast<std::int64_t>(i) == r.peak_stage ? "*" : ""));
  t.row(head);
  auto row = [&](const std::string& name, auto get) {
    std::vector<std::string> cells{name};
    for (auto i : cols) cells.push_back(get(r.stages[i]));
    t.row(cells);
  };
  row("layers (full recompute)", [](const StageMemory& st) {
    std::string v = std::to_string(st.layers);
    if (st.full_recompute > 0) v += " (" + std::to_string(st.full_recompute) + ")";
    if (st.embedding) v = "emb+" + v;
    if (st.head) v += "+head";
    return v;
  });
  row("micro-batches in flight", [](const StageMemory& st) {
    std::string v;
    for (std::size_t k = 0; k < st.chunk_inflight.size(); ++k)
      v += (k ? "/" : "") + std::to_string(st.chunk_inflight[k]);
    return v;
  });
  const auto first_terms = stage_terms(r.stages[cols[0]]);
  for (std::size_t k = 0; k < first_terms.size(); ++k) {
    bool any = false;
    for (auto i : cols) any = any || stage_terms(r.stages[i])[k].second != 0;
    if (!any) continue;
    row(first_terms[k].first, [k](const StageMemory& st) { return gib(stage_terms(st)[k].second); });
  }
  row("= allocated", [](const StageMemory& st) { return gib(st.allocated); });
  row("= reserved", [](const StageMemory& st) { return gib(st.reserved); });
  row("= device", [](const StageMemory& st) { return gib(st.device); });
  t.print(out);
  out << "\ntransient candidates (GiB, stage " << r.peak_stage << "): ";
  const StageMemory& p = r.stages[static_cast<std::size_t>(r.peak_stage)];
  out << "layer " << gib(p.tr_layer) << ", attention " << gib(p.tr_attn) << ", logits " << gib(p.tr_logits) << ", fsdp "
      << gib(p.tr_fsdp) << ", buckets " << gib(p.tr_bucket) << ", cp " << gib(p.tr_cp) << ", ep " << gib(p.tr_ep);
  if (s.schedule == Schedule::dualpipev) out << ", dualpipev overlap " << gib(p.tr_dpv);
  out << "; optimizer step " << gib(p.step_transient) << (p.step_phase_binds ? " (binds)" : "") << "\n";
  out << "peak " << gib(r.peak) << " GiB on stage " << r.peak_stage << "; budget " << gib(r.budget) << " GiB (capacity "
      << gib(r.capacity) << "); headroom " << gib(r.budget - r.peak) << " GiB\n";
  out << "likely " << likely_range(r.peak / kGiB, band, 2) << " GiB (p10-p90 of measured/estimate, " << band.basis
      << ")\n";
  if (s.offload != Offload::none) {
    out << "host: " << gib(r.host_peak) << " GiB of offloaded states per rank (largest stage); host budget "
        << gib(r.host_budget) << " GiB per device (host_memory " << gib(c.device.host_memory) << " less "
        << gib(c.device.host_reserved) << " reserved)\n";
  }
  // With --fit-margin the peak that must fit is the estimate times its family's percentile.
  const double factor = run.options.fit_factor_for(s.recompute);
  const std::string margin =
      factor != 1 ? " at the fit margin (peak x " + fixed(factor, 3) + " = " + gib(r.peak * factor) + " GiB)" : "";
  if (r.fits) {
    out << "fits" << margin << (s.offload != Offload::none ? ", and the host holds the offloaded states" : "") << "\n";
  } else if (!r.host_fits && r.peak * factor <= r.budget) {
    out << "DOES NOT FIT in host memory: the offloaded states need " << gib(r.host_peak - r.host_budget)
        << " GiB more than the host budget per device\n";
  } else {
    const auto [term, bytes] = dominant_term(p);
    out << "DOES NOT FIT" << margin << ": stage " << r.peak_stage << " needs " << gib(r.peak * factor - r.budget)
        << " GiB more than the budget; its largest term is " << term << " (" << gib(bytes) << " GiB)\n";
  }
}

void write_json(const Model& m, const Run& run, const Cluster& cluster, const Strategy& s, const MemoryReport& r,
                const TimeReport& t, std::ostream& out) {
  JsonWriter j(out);
  j.begin_object().key("strategy");
  write_strategy_json(j, s);
  j.field("fits", r.fits).field("budget_gib", r.budget / kGiB).field("capacity_gib", r.capacity / kGiB);
  j.field("peak_memory_gib", r.peak / kGiB).field("peak_stage", static_cast<std::int64_t>(r.peak_stage));
  write_band_json(j, "peak_memory_likely_gib", r.peak / kGiB, memory_band(m, run, cluster, s));
  j.field("fit_factor", run.options.fit_factor_for(s.recompute));
  j.key("host")
      .begin_object()
      .field("offloaded_gib", r.host_peak / kGiB)
      .field("budget_gib", r.host_budget / kGiB)
      .field("fits", r.host_fits)
      .end_object();
  j.key("stages").begin_array();
  for (const auto& st : r.stages) {
    j.begin_object().field("stage", st.stage).field("total_gib", st.device / kGiB);
    j.key("terms").begin_object();
    for (const auto& [name, bytes] : stage_terms(st)) j.field(name, bytes / kGiB);
    j.end_object();
    j.field("allocated_gib", st.allocated / kGiB).field("reserved_gib", st.reserved / kGiB);
    j.field("host_gib", st.host / kGiB);
    j.field("layers", st.layers).field("communicators", st.communicators);
    j.key("in_flight").begin_array();
    for (auto n : st.chunk_inflight) j.value(n);
    j.end_array();
    j.key("transients")
        .begin_object()
        .field("layer", st.tr_layer / kGiB)
        .field("attention", st.tr_attn / kGiB)
        .field("logits", st.tr_logits / kGiB)
        .field("fsdp", st.tr_fsdp / kGiB)
        .field("bucket", st.tr_bucket / kGiB)
        .field("cp", st.tr_cp / kGiB)
        .field("ep", st.tr_ep / kGiB)
        .field("dualpipev", st.tr_dpv / kGiB)
        .field("optimizer_step", st.step_transient / kGiB)
        .end_object();
    j.end_object();
  }
  j.end_array();
  if (s.cp > 1) {  // the seed's act_cp_layer, one attention layer (memory-model.md §10)
    const CpAttentionBreakdown b = cp_attention_breakdown(m, run, s, r.stages[0].tr_cp);
    j.key("cp_breakdown")
        .begin_object()
        .field("cp", s.cp)
        .field("s", run.seq)
        .field("attention_type", b.attention_type)
        .field("algorithm", to_string(s.cp_algo))
        .field("kv_cache", b.kv_cache)
        .field("attention_scores", b.attention_scores)
        .field("softmax_outputs", b.softmax_outputs)
        .field("dropout_mask", b.dropout_mask)
        .field("s2_reduction", b.s2_reduction)
        .field("kv_reduction", b.kv_reduction)
        .field("comm_buffer", b.comm_buffer)
        .field("total_memory", b.total_memory)
        .field("total_reduction", b.total_reduction)
        .end_object();
  }
  j.field("step_time_s", t.step);
  write_band_json(j, "step_time_likely_s", t.step, step_time_band(m, run, cluster, s));
  j.key("time_terms").begin_object();
  for (const auto& [name, seconds] : time_terms(t)) j.field(name, seconds);
  j.end_object();
  j.field("tokens_per_sec_per_device", t.tokens_per_sec_per_device).field("mfu", t.mfu);
  j.field("model_flops", t.model_flops).field("slowest_stage", t.slowest_stage);
  j.end_object();
  out << '\n';
}

}  // namespace

int command_estimate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CommonFlags common;
  ClusterFlags cluster_flags;
  RunFlags run_flags;
  std::string strategy_text;
  po::options_description desc(
      "Usage: meshfit estimate --model M --device D --devices N --seq S --global-batch B --strategy S\n\n"
      "Per-stage, per-term peak memory of one strategy. Exit 0 if it fits, 1 if not, 2 on bad input.\n"
      "Strategy: comma-separated key=value, e.g. dp=8,tp=4,sp=true,pp=2,zero=1,recompute=selective,mbs=1\n"
      "Options");
  add_cluster_options(desc, cluster_flags);
  add_sapp_nd_option(desc, cluster_flags);
  bool balance = false;
  double balance_slack = 0;
  desc.add_options()("strategy", po::value(&strategy_text), "the strategy string")(
      "balance", po::bool_switch(&balance),
      "also the pipeline layout (layers, and under full recompute the recomputed layers, per stage) that "
      "minimises the peak; the exit code then says whether that layout fits (vpp 1)")(
      "balance-slack", po::value(&balance_slack),
      "how much slower (a share, e.g. 0.05) the balanced layout's slowest stage may be than the even split's "
      "(default 0)");
  add_run_options(desc, run_flags);
  add_common_options(desc, common);
  const auto parsed = parse_or_help("estimate", args, desc, common, out);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const OutputFormat format = parse_format(common.format, {"table", "json"});
  StrategyInputs in = load_strategy_inputs("estimate", vm, {"model", "device", "devices", "strategy"}, cluster_flags,
                                           run_flags, strategy_text);
  const Model& model = in.model;
  const Cluster& cluster = in.cluster;
  const Run& run = in.run;
  const Strategy& s = in.strategy;
  std::vector<std::string>& warnings = in.warnings;
  for (const auto& w : model.input_warnings) warnings.push_back(w);
  for (const auto& c : model.measured_census) {
    const double tokens = static_cast<double>(run.seq) / static_cast<double>(s.cp);
    if (c.seq_length != tokens) {
      warnings.push_back("the " + c.kind + " census was measured at " + fixed(c.seq_length, 0) +
                         " tokens per CP rank, this run has " + fixed(tokens, 0) +
                         "; its bytes per token are used as measured");
    }
  }
  for (const auto& w : warnings) err << "meshfit estimate: warning: " << w << '\n';
  const double headroom = parse_headroom(cluster_flags.headroom, cluster.device.capacity);
  const MemoryReport report = estimate_memory(model, run, cluster, s, headroom);
  const TimeReport timing = estimate_step_time(model, run, cluster, s);
  if (balance) check_flag_range("--balance-slack", balance_slack, 0, 10);
  const std::optional<BalancedLayout> balanced =
      balance ? balance_pipeline(model, run, cluster, s, 1 + balance_slack) : std::nullopt;
  if (format == OutputFormat::json) {
    std::ostringstream body;
    write_json(model, run, cluster, s, report, timing, body);
    std::string text = body.str();
    if (balance) {  // one more field in the same object
      std::ostringstream field;
      JsonWriter j(field);
      j.begin_object();
      write_balance_json(j, current_layout(model, run, cluster, s), balanced, balance_slack);
      j.end_object();
      text = text.substr(0, text.rfind('}')) + "," + field.str().substr(1) + "\n";
    }
    out << text;
  } else {
    write_table(model, run, cluster, s, report, out);
    write_time_table(timing, step_time_band(model, run, cluster, s), out);
    if (balance) write_balance_table(current_layout(model, run, cluster, s), balanced, balance_slack, out);
  }
  if (balanced) {
    const MemoryReport b = estimate_memory(model, with_layout(run, *balanced), cluster, s, headroom);
    return b.fits ? 0 : 1;
  }
  return report.fits ? 0 : 1;
}

}  // namespace meshfit
