// `meshfit explain`: why one strategy does or does not fit, and what single change would make it
// fit (docs/spec/cli.md, search-and-time.md §6.5).
#include <algorithm>
#include <cmath>

#include "engine/cli_options.hpp"
#include "engine/commands.hpp"
#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "engine/json_writer.hpp"
#include "engine/memory_terms.hpp"
#include "engine/model_config.hpp"
#include "engine/strategy_inputs.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"
#include "engine/uncertainty.hpp"
#include "search/strategy_explain.hpp"

namespace meshfit {

namespace {

std::string gib(double bytes) { return fixed(bytes / kGiB, 2); }

// What both formats print: the inputs, the explanation, its peak stage and that stage's terms,
// largest first, with how far the peak is over the budget. The writers bind its fields by name.
struct Explained {
  const Model& model;
  const Cluster& cluster;
  const Run& run;
  const Strategy& s;
  const Explanation& e;
  const MemoryReport& r;
  bool valid;
  const StageMemory* peak;  // null for an invalid strategy
  std::vector<std::pair<std::string, double>> terms;
  double excess;
};

Explained explained(const StrategyInputs& in, const Explanation& e) {
  const bool valid = e.broken.empty();
  const MemoryReport& r = e.memory;
  Explained x{in.model, in.cluster, in.run, in.strategy, e, r, valid, nullptr, {}, 0};
  if (valid) {
    x.peak = &r.stages[static_cast<std::size_t>(r.peak_stage)];
    x.terms = stage_terms(*x.peak);
    std::stable_sort(x.terms.begin(), x.terms.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    x.excess = r.peak * in.run.options.fit_factor_for(in.strategy.recompute) - r.budget;  // with --fit-margin
  }
  return x;
}

void write_explain_json(const Explained& x, std::ostream& out) {
  const auto& [model, cluster, run, s, e, r, valid, peak, terms, excess] = x;
  JsonWriter j(out);
  j.begin_object().key("strategy");
  write_strategy_json(j, s);
  j.field("valid", valid).key("broken_rules").begin_array();
  for (HardRule h : e.broken) {
    j.begin_object().field("rule", rule_id(h)).field("message", explain_rule(h, model, run, cluster, s)).end_object();
  }
  j.end_array().key("broken_policies").begin_array();
  for (Policy p : e.policies) j.value(policy_name(p));
  j.end_array();
  if (valid) {
    j.field("fits", r.fits)
        .field("budget_gib", r.budget / kGiB)
        .field("peak_memory_gib", r.peak / kGiB)
        .field("peak_stage", r.peak_stage)
        .field("headroom_gib", (r.budget - r.peak) / kGiB)
        .field("step_time_s", e.time.step);
    if (!r.fits) {
      j.key("overflow").begin_object().field("stage", r.peak_stage).field("excess_gib", excess / kGiB);
      j.key("terms").begin_array();
      for (const auto& [name, bytes] : terms) {
        j.begin_object()
            .field("term", name)
            .field("gib", bytes / kGiB)
            .field("share", bytes / peak->device)
            .field("alone_fits", bytes >= excess)
            .end_object();
      }
      j.end_array().key("other_stages").begin_array();
      for (const auto& st : r.stages) {
        if (st.stage != r.peak_stage && st.device > r.budget) {
          j.begin_object().field("stage", st.stage).field("excess_gib", (st.device - r.budget) / kGiB).end_object();
        }
      }
      j.end_array().end_object();
    }
    j.field("changes_fit", e.changes_fit).key("changes").begin_array();
    for (const auto& ch : e.changes) {
      j.begin_object().field("change", ch.change).key("strategy");
      write_strategy_json(j, ch.strategy);
      j.field("peak_memory_gib", ch.peak / kGiB)
          .field("headroom_gib", -ch.excess / kGiB)
          .field("step_time_s", ch.step)
          .field("delta_time", ch.step / e.time.step - 1)
          .field("fits", ch.fits)
          .end_object();
    }
    j.end_array();
  }
  j.end_object();
  out << '\n';
}

void write_explain_text(const Explained& x, std::ostream& out) {
  const auto& [model, cluster, run, s, e, r, valid, peak, terms, excess] = x;
  out << "strategy " << strategy_to_string(s) << "\n";
  if (!valid) {
    out << "INVALID:\n";
    for (HardRule h : e.broken) out << "  " << explain_rule(h, model, run, cluster, s) << '\n';
    return;
  }
  for (Policy p : e.policies)
    out << "note: breaks policy " << policy_id(p) << " " << policy_name(p) << " (a practice rule the search applies)\n";
  const Band band = memory_band(model, run, cluster, s);
  out << "step time " << fixed(e.time.step, 3) << " s; peak " << gib(r.peak) << " GiB (likely "
      << likely_range(r.peak / kGiB, band, 2) << ", " << band.basis << ") on stage " << r.peak_stage << "; budget "
      << gib(r.budget) << " GiB\n";
  if (r.fits) {
    out << "fits with " << gib(r.budget - r.peak) << " GiB of headroom\n";
  } else {
    out << "DOES NOT FIT: stage " << r.peak_stage << " exceeds the budget by " << gib(excess) << " GiB ("
        << with_commas(static_cast<std::int64_t>(std::ceil(excess))) << " bytes)\n";
    TextTable t;
    for (const auto& [name, bytes] : terms) {
      if (bytes <= 0) continue;
      t.row({name, gib(bytes) + " GiB", fixed(100 * bytes / peak->device, 1) + "%",
             bytes >= excess ? "removing this term alone would fit" : ""});
    }
    t.print(out, "  ");
    for (const auto& st : r.stages) {
      if (st.stage != r.peak_stage && st.device > r.budget) {
        out << "  stage " << st.stage << " also exceeds it, by " << gib(st.device - r.budget) << " GiB\n";
      }
    }
  }
  out << (e.changes_fit ? "\nsingle changes that fit, fastest first:\n" : "\nno single change fits; the closest:\n");
  TextTable t;
  t.row({"change", "peak GiB", "headroom GiB", "step s", "vs now"});
  for (const auto& ch : e.changes) {
    t.row({ch.change, gib(ch.peak), gib(-ch.excess), fixed(ch.step, 3),
           (ch.step >= e.time.step ? "+" : "") + fixed(100 * (ch.step / e.time.step - 1), 1) + "%"});
  }
  t.print(out, "  ");
}

}  // namespace

int command_explain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CommonFlags common;
  ClusterFlags cluster_flags;
  RunFlags run_flags;
  std::string strategy_text;
  po::options_description desc(
      "Usage: meshfit explain --model M --device D --devices N --seq S --global-batch B --strategy S\n\n"
      "Every rule the strategy breaks; else whether it fits, the stage and terms that overflow, and the\n"
      "single-dimension changes that would make it fit. Exit 0 if it fits, 1 if not (or invalid).\nOptions");
  add_cluster_options(desc, cluster_flags);
  add_sapp_nd_option(desc, cluster_flags);
  desc.add_options()("strategy", po::value(&strategy_text), "the strategy string");
  add_run_options(desc, run_flags);
  add_common_options(desc, common);
  const auto parsed = parse_or_help("explain", args, desc, common, out);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const OutputFormat format = parse_format(common.format, {"table", "json"});
  const StrategyInputs in = load_strategy_inputs("explain", vm, {"model", "device", "devices", "strategy"},
                                                 cluster_flags, run_flags, strategy_text, false);
  const Model& model = in.model;
  const Cluster& cluster = in.cluster;
  const Run& run = in.run;
  const Strategy& s = in.strategy;
  for (const auto& w : in.warnings) err << "meshfit explain: warning: " << w << '\n';
  SearchSpace space;
  space.model = &model;
  space.run = &run;
  space.cluster = &cluster;
  const double headroom = parse_headroom(cluster_flags.headroom, cluster.device.capacity);
  const Explanation e = explain_strategy(space, s, headroom);
  const Explained x = explained(in, e);
  if (format == OutputFormat::json) {
    write_explain_json(x, out);
  } else {
    write_explain_text(x, out);
  }
  return x.valid && e.memory.fits ? 0 : 1;
}

}  // namespace meshfit
