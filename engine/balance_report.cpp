#include "engine/balance_report.hpp"

#include <string>
#include <vector>

#include "engine/memory_terms.hpp"
#include "engine/text_format.hpp"

namespace meshfit {

namespace {

std::string list_text(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void write_layout_json(JsonWriter& j, const BalancedLayout& b) {
  j.begin_object().key("slots").begin_array();
  for (auto v : b.slots) j.value(v);
  j.end_array();
  if (!b.recompute.empty()) {
    j.key("full_recompute").begin_array();
    for (auto v : b.recompute) j.value(v);
    j.end_array();
  }
  j.key("stage_peak_gib").begin_array();
  for (double p : b.stage_peaks) j.value(p / kGiB);
  j.end_array();
  j.field("peak_memory_gib", b.peak_bytes / kGiB).field("step_time_s", b.step_s).field("max_tau_s", b.max_tau_s);
  j.end_object();
}

}  // namespace

void write_balance_table(const BalancedLayout& now, const std::optional<BalancedLayout>& balanced, double slack,
                         std::ostream& out) {
  out << "\npipeline balance (slowest stage's time per micro-batch within +" << fixed(100 * slack, 1)
      << "% of the even split's):\n";
  if (!balanced) {
    out << "  none: needs pp > 1 with vpp = 1 and no DualPipeV, and a layout within the time bound\n";
    return;
  }
  TextTable t;
  std::vector<std::string> head{""};
  for (std::size_t i = 0; i < now.slots.size(); ++i) head.push_back("stage " + std::to_string(i));
  t.row(head);
  auto row = [&](const std::string& name, const std::vector<std::int64_t>& v) {
    std::vector<std::string> r{name};
    for (auto x : v) r.push_back(std::to_string(x));
    t.row(r);
  };
  auto peaks = [&](const std::string& name, const std::vector<double>& v) {
    std::vector<std::string> r{name};
    for (double x : v) r.push_back(fixed(x / kGiB, 2));
    t.row(r);
  };
  row("slots, even", now.slots);
  row("slots, balanced", balanced->slots);
  if (!balanced->recompute.empty()) {
    row("full recompute, even", now.recompute);
    row("full recompute, balanced", balanced->recompute);
  }
  peaks("GiB, even", now.stage_peaks);
  peaks("GiB, balanced", balanced->stage_peaks);
  t.print(out, "  ");
  out << "  peak " << fixed(now.peak_bytes / kGiB, 2) << " -> " << fixed(balanced->peak_bytes / kGiB, 2)
      << " GiB; step " << fixed(now.step_s, 3) << " -> " << fixed(balanced->step_s, 3) << " s\n";
  out << "  run options: layers_per_vstage: " << list_text(balanced->slots);
  if (!balanced->recompute.empty()) out << ", full_layers_per_vstage: " << list_text(balanced->recompute);
  out << "\n";
}

void write_balance_json(JsonWriter& j, const BalancedLayout& now, const std::optional<BalancedLayout>& balanced,
                        double slack) {
  j.key("balance").begin_object().field("tau_slack", slack).key("even");
  write_layout_json(j, now);
  j.key("balanced");
  if (balanced) {
    write_layout_json(j, *balanced);
  } else {
    j.null();
  }
  j.end_object();
}

}  // namespace meshfit
