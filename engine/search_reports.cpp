#include "engine/search_reports.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/dimension_columns.hpp"
#include "engine/memory_terms.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"
#include "engine/uncertainty.hpp"
#include "engine/utf8_text.hpp"
#include "estimators/seed_conventions.hpp"

namespace meshfit {

namespace {

bool tight(const ScoredStrategy& x, double budget, double fraction) { return x.peak_bytes > budget * (1 - fraction); }

std::string row_flags(const ScoredStrategy& x, bool top, double budget, double fraction) {
  std::string f = tight(x, budget, fraction) ? "tight" : "";
  if (top && x.dominated) f += std::string(f.empty() ? "" : ",") + "dom";  // the table's legend says so
  return f;
}

// The likely range of the rows' figures, once per recompute mode among them (the family of a row
// differs from another's only there): "likely peak x0.93-1.06, step time x0.85-1.12 of the
// estimate (recompute=full: 12 torchtitan dense full hopper cases)".
void write_bands_note(const SearchReport& rep, const std::vector<Strategy>& rows, std::ostream& out) {
  std::vector<Recompute> seen;
  for (const auto& s : rows) {
    if (std::find(seen.begin(), seen.end(), s.recompute) != seen.end()) continue;
    seen.push_back(s.recompute);
    const Band mem = memory_band(rep.model, rep.run, rep.cluster, s);
    const Band time = step_time_band(rep.model, rep.run, rep.cluster, s);
    out << "likely, recompute=" << to_string(s.recompute) << ": peak x" << fixed(mem.lo, 2) << "-" << fixed(mem.hi, 2)
        << " (" << mem.basis << "), step time x" << fixed(time.lo, 2) << "-" << fixed(time.hi, 2) << " (" << time.basis
        << ")\n";
  }
  const double factor = rep.run.options.smallest_fit_factor();
  if (rep.run.options.fit_factor != std::array<double, 3>{1, 1, 1} && factor > 0) {
    out << "fits means: the peak times its recompute mode's --fit-margin factor (none x"
        << fixed(rep.run.options.fit_factor[0], 3) << ", selective x" << fixed(rep.run.options.fit_factor[1], 3)
        << ", full x" << fixed(rep.run.options.fit_factor[2], 3) << ") within the budget\n";
  }
}

void write_records(const std::vector<ScoredStrategy>& xs, bool top, const DimColumns& cols, const SearchReport& rep,
                   std::ostream& out) {
  TextTable t(0);
  std::vector<std::string> head;
  const std::vector<StrategyDim> names = strategy_dims(Strategy{});
  for (std::size_t k : cols.shown) head.emplace_back(column_label(names[k].key));
  for (const char* h : {"step s", "peak GiB", "stage", "tok/s/dev", "MFU"}) {
    if (rep.wide || std::string(h) != "stage") head.emplace_back(h);  // the peak's stage: --wide
  }
  if (rep.train_tokens) head.insert(head.end(), {"days", "GPU-h"});
  if (rep.train_tokens && rep.gpu_hour_price) head.emplace_back("cost");
  head.emplace_back("");
  t.row(head);
  for (const auto& x : xs) {
    const std::vector<StrategyDim> dims = strategy_dims(x.strategy);
    std::vector<std::string> cells;
    for (std::size_t k : cols.shown) cells.push_back(dimension_cell(x.strategy, dims[k], rep.wide));
    cells.push_back(fixed(x.step_s, 3));
    cells.push_back(fixed(x.peak_bytes / kGiB, 2));
    if (rep.wide) cells.push_back(std::to_string(x.peak_stage));
    cells.push_back(fixed(x.tokens_per_sec_per_device, 0));
    cells.push_back(fixed(100 * x.mfu, 1) + "%");
    if (const auto c = training_cost(x, rep)) {
      cells.push_back(fixed(c->days, 1));
      cells.push_back(with_commas(static_cast<std::int64_t>(std::llround(c->gpu_hours))));
      if (c->cost) cells.push_back(with_commas(static_cast<std::int64_t>(std::llround(*c->cost))));
    } else if (rep.train_tokens) {
      cells.insert(cells.end(), rep.gpu_hour_price ? 3 : 2, "-");
    }
    cells.push_back(row_flags(x, top, rep.result.budget, rep.tight_fraction));
    t.row(std::move(cells));
  }
  t.print(out);  // no indent: the dimension columns need the width
}

// The inputs the result answers, echoed so that a stored result says what it is of.
// `counts`: a --devices list's counts, in place of the one count.
void write_inputs_json(JsonWriter& j, const SearchReport& rep, const std::vector<std::int64_t>* counts = nullptr) {
  j.key("inputs").begin_object().field("model", rep.model.name).field("device", rep.cluster.device.name);
  if (counts) {
    j.key("devices").begin_array();
    for (std::int64_t n : *counts) j.value(n);
    j.end_array();
  } else {
    j.field("devices", rep.cluster.devices);
  }
  j.field("seq", rep.run.seq)
      .field("global_batch", rep.run.global_batch)
      .field("framework", to_string(rep.run.profile.framework))
      .field("rules", rules_text(rep.run))
      .field("precision", rep.run.precision.preset)
      .field("headroom_gib", rep.headroom_bytes / kGiB)
      .field("tight_margin", rep.tight_fraction)
      .end_object();
}

}  // namespace

std::optional<TrainingCost> training_cost(const ScoredStrategy& x, const SearchReport& rep) {
  if (!rep.train_tokens || x.tokens_per_sec_per_device <= 0) return std::nullopt;
  const double devices = static_cast<double>(rep.cluster.devices);
  const double seconds = *rep.train_tokens / (x.tokens_per_sec_per_device * devices);
  TrainingCost c;
  c.days = seconds / 86400;
  c.gpu_hours = devices * seconds / 3600;
  if (rep.gpu_hour_price) c.cost = c.gpu_hours * *rep.gpu_hour_price;
  return c;
}

void write_record_json(JsonWriter& j, const ScoredStrategy& x, const SearchReport& rep, double budget, bool top) {
  const double tight_fraction = rep.tight_fraction;
  j.begin_object().key("strategy");
  write_strategy_json(j, x.strategy);
  j.field("strategy_string", strategy_to_string(x.strategy))
      .field("peak_memory_gib", x.peak_bytes / kGiB)
      .field("peak_stage", x.peak_stage)
      .field("step_time_s", x.step_s)
      .field("tokens_per_sec_per_device", x.tokens_per_sec_per_device)
      .field("mfu", x.mfu)
      .field("tight", tight(x, budget, tight_fraction));
  write_band_json(j, "peak_memory_likely_gib", x.peak_bytes / kGiB,
                  memory_band(rep.model, rep.run, rep.cluster, x.strategy));
  write_band_json(j, "step_time_likely_s", x.step_s, step_time_band(rep.model, rep.run, rep.cluster, x.strategy));
  if (top) j.field("dominated", x.dominated);
  if (const auto c = training_cost(x, rep)) {
    j.field("train_days", c->days).field("gpu_hours", c->gpu_hours);
    if (c->cost) j.field("cost", *c->cost);
  }
  j.end_object();
}

void write_search_json(const SearchReport& rep, std::ostream& out) {
  const SearchResult& r = rep.result;
  JsonWriter j(out);
  j.begin_object().field("schema_version", kSearchSchemaVersion);
  write_inputs_json(j, rep);
  j.field("budget_gib", r.budget / kGiB);
  j.key("front").begin_array();
  for (const auto& x : r.front) write_record_json(j, x, rep, r.budget, false);
  j.end_array().key("top").begin_array();
  for (const auto& x : r.top) write_record_json(j, x, rep, r.budget, true);
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
  j.field("interrupted", r.interrupted);
  if (rep.timings) j.field("seconds", r.seconds);
  j.end_object();
  out << '\n';
}

void write_search_csv(const SearchReport& rep, std::ostream& out) {
  const SearchResult& r = rep.result;
  // A comment line before the header, so that no reader takes a partial result for a whole one.
  if (r.interrupted) out << "# INTERRUPTED: the rows below cover only the part of the space searched\n";
  out << "set,strategy,peak_memory_gib,peak_stage,step_time_s,tokens_per_sec_per_device,mfu,tight,dominated\n";
  auto row = [&](const char* set, const ScoredStrategy& x, bool top) {
    out << set << ",\"" << strategy_to_string(x.strategy) << "\"," << fixed(x.peak_bytes / kGiB, 4) << ','
        << x.peak_stage << ',' << fixed(x.step_s, 6) << ',' << fixed(x.tokens_per_sec_per_device, 2) << ','
        << fixed(x.mfu, 4) << ',' << (tight(x, r.budget, rep.tight_fraction) ? "true" : "false") << ','
        << (top && x.dominated ? "true" : "false") << '\n';
  };
  for (const auto& x : r.front) row("front", x, false);
  for (const auto& x : r.top) row("top", x, true);
}

void write_search_table(const SearchReport& rep, std::ostream& out) {
  const SearchResult& r = rep.result;
  out << "search " << printable(rep.model.name) << " on " << rep.cluster.devices << " x "
      << printable(rep.cluster.device.name) << ", seq " << rep.run.seq << ", global batch " << rep.run.global_batch
      << "; budget " << fixed(r.budget / kGiB, 2) << " GiB per device\n";
  if (r.interrupted) out << "INTERRUPTED: the results below cover only the part of the space searched\n";
  std::vector<Strategy> shown;
  for (const auto& x : r.front) shown.push_back(x.strategy);
  for (const auto& x : r.top) shown.push_back(x.strategy);
  const DimColumns cols = dim_columns(shown, rep.wide);
  if (!cols.common.empty()) out << "every strategy below has " << cols.common << "\n";
  write_bands_note(rep, shown, out);
  out << "\nPareto front (" << r.front.size() << "), fastest first:\n";
  write_records(r.front, false, cols, rep, out);
  out << "\ntop " << r.top.size() << " fastest fitting:\n";
  write_records(r.top, true, cols, rep, out);
  out << "\nenumerated " << with_commas(r.enumerated) << ", valid " << with_commas(r.valid) << ", fitting "
      << with_commas(r.fitting) << ", on the front " << r.front.size();
  if (rep.timings) out << "; " << fixed(r.seconds, 2) << " s";
  out << '\n';
  std::vector<std::pair<std::int64_t, std::size_t>> rules;
  for (std::size_t i = 0; i < kRuleSlots; ++i) {
    if (r.histogram[i] > 0) rules.emplace_back(r.histogram[i], i);
  }
  std::sort(rules.begin(), rules.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  // Wrapped to 120 columns, as the tables are.
  std::string line = "rejected by:";
  for (const auto& [n, i] : rules) {
    const std::string item = slot_name(i) + " " + with_commas(n);
    if (line.size() + 2 + item.size() > 120) {
      out << line << '\n';
      line = "            ";
    }
    line += "  " + item;
  }
  out << line << '\n';
  const bool any_tight = std::any_of(r.front.begin(), r.front.end(),
                                     [&](const ScoredStrategy& x) { return tight(x, r.budget, rep.tight_fraction); });
  if (std::any_of(r.top.begin(), r.top.end(), [](const ScoredStrategy& x) { return x.dominated; })) {
    out << "dom: not on the front (a row above is as fast with less memory)\n";
  }
  if (any_tight) {
    out << "tight: within " << fixed(100 * rep.tight_fraction, 0)
        << "% of the budget, the memory estimate's typical error; keep a --headroom there or pick a row with room\n";
  }
}

void write_counts_json(const CountResults& c, const SearchReport& settings, std::ostream& out) {
  const auto& results = c.results;
  const auto& smallest = c.smallest;
  JsonWriter j(out);
  j.begin_object().field("schema_version", kSearchSchemaVersion);
  write_inputs_json(j, settings, &c.counts);
  j.key("device_counts").begin_array();
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
      write_record_json(j, r.top.front(), settings, r.budget, false);
    j.field("interrupted", r.interrupted);
    if (settings.timings) j.field("seconds", r.seconds);
    j.end_object();
  }
  j.end_array().key("smallest_fitting_devices");
  if (smallest)
    j.value(*smallest);
  else
    j.null();
  j.field("not_searched", static_cast<std::int64_t>(c.listed - results.size()));
  j.field("interrupted", c.interrupted).end_object();
  out << '\n';
}

void write_counts_csv(const CountResults& c, const SearchReport& /*settings*/, std::ostream& out) {
  if (c.interrupted) {
    out << "# INTERRUPTED: " << c.results.size() << " of " << c.listed << " device counts searched\n";
  }
  out << "devices,enumerated,valid,fitting,front,best_strategy,peak_memory_gib,step_time_s,tokens_per_sec_per_device,"
         "mfu,smallest_fitting\n";
  for (const auto& [n, r] : c.results) {
    out << n << ',' << r.enumerated << ',' << r.valid << ',' << r.fitting << ',' << r.front.size() << ',';
    if (r.top.empty()) {
      out << ",,,,";
    } else {
      const ScoredStrategy& b = r.top.front();
      out << '"' << strategy_to_string(b.strategy) << "\"," << fixed(b.peak_bytes / kGiB, 4) << ','
          << fixed(b.step_s, 6) << ',' << fixed(b.tokens_per_sec_per_device, 2) << ',' << fixed(b.mfu, 4);
    }
    out << ',' << (c.smallest && *c.smallest == n ? "true" : "false") << '\n';
  }
}

void write_counts_table(const CountResults& c, const SearchReport& settings, std::ostream& out) {
  const Model& model = settings.model;
  const Cluster& cluster = settings.cluster;
  const Run& run = settings.run;
  const auto& results = c.results;
  const auto& smallest = c.smallest;
  const bool interrupted = c.interrupted;
  out << "search " << printable(model.name) << " on " << printable(cluster.device.name) << ", seq " << run.seq
      << ", global batch " << run.global_batch << ", per device count:\n";
  if (interrupted) {
    out << "INTERRUPTED: " << results.size() << " of " << c.listed << " device counts searched"
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

}  // namespace meshfit
