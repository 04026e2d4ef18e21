#include "engine/check_baseline.hpp"

#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/text_format.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

std::map<std::string, BaselineEntry> read_check_baseline(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);  // JSON is YAML
  if (!root.IsMap() || !root["entries"].IsSequence()) {
    throw InputError(path, "entries", "expected a meshfit check JSON report (written with --json)");
  }
  const Fields top(root, path);
  if (const auto v = top.optional_int("schema_version"); !v || *v != 1) {
    top.fail("schema_version", "expected 1 (a report of this meshfit version)");
  }
  std::map<std::string, BaselineEntry> out;
  const YAML::Node entries = root["entries"];
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Fields f(entries[i], path, "entries[" + std::to_string(i) + "]");
    const auto name = f.optional_string("name");
    if (!name) f.fail("name", "missing; expected the entry's name");
    BaselineEntry b;
    b.pinned = f.optional_bool("pinned").value_or(false);
    b.peak_gib = f.optional_number("peak_memory_gib", 0, 1e12);
    b.step_time_s = f.optional_number("step_time_s", 0, 1e12);
    if (f.has("terms")) {
      const YAML::Node terms = f.raw("terms");
      if (!terms.IsMap()) f.fail("terms", "expected a map of memory terms in GiB");
      const Fields t(terms, path, f.path("terms"));
      for (const auto& k : t.keys()) b.terms_gib.emplace_back(k, t.optional_number(k, -1e12, 1e12).value_or(0));
    }
    out[*name] = b;
  }
  return out;
}

double parse_max_growth(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  const auto v = parse_number(t);
  if (!v || *v < 0)
    throw InputError("command line", "--max-growth", "expected a percentage >= 0 such as 5%, got " + quoted_text(text));
  return *v / 100;
}

namespace {

std::string percent(double fraction) { return fixed(100 * fraction, 1) + "%"; }

// The term whose GiB grew most between the two reports, as "<term> +x GiB".
std::string largest_growth(const std::vector<std::pair<std::string, double>>& old_terms,
                           const std::vector<std::pair<std::string, double>>& new_terms) {
  std::string name;
  double grew = 0;
  for (const auto& [term, gib] : new_terms) {
    double before = 0;
    for (const auto& [t, g] : old_terms) {
      if (t == term) before = g;
    }
    if (gib - before > grew) {
      grew = gib - before;
      name = term;
    }
  }
  return name.empty() ? "" : name + " +" + fixed(grew, 2) + " GiB";
}

void add_failure(CheckResult& r, const std::string& why) {
  if (r.status == CheckStatus::error) return;
  r.status = CheckStatus::fail;
  r.reason += (r.reason.empty() ? "" : "; ") + why;
}

}  // namespace

void compare_with_baseline(std::vector<CheckResult>& results, const std::map<std::string, BaselineEntry>& baseline,
                           double max_growth) {
  for (auto& r : results) {
    const auto it = baseline.find(r.name);
    if (it == baseline.end() || r.status == CheckStatus::error) continue;
    const BaselineEntry& b = it->second;
    r.baseline_peak_gib = b.peak_gib;
    r.baseline_step_time_s = b.step_time_s;
    if (r.pinned && b.pinned && b.peak_gib && r.peak_gib && *b.peak_gib > 0) {
      const double growth = *r.peak_gib / *b.peak_gib - 1;
      if (growth > max_growth) {
        const std::string term = largest_growth(b.terms_gib, r.terms_gib);
        add_failure(r, "peak memory grew " + percent(growth) + " (" + fixed(*b.peak_gib, 2) + " -> " +
                           fixed(*r.peak_gib, 2) + " GiB, allowed " + percent(max_growth) + ")" +
                           (term.empty() ? "" : "; most in " + term));
      }
    }
    if (!r.pinned && b.step_time_s && r.step_time_s && *b.step_time_s > 0) {
      const double growth = *r.step_time_s / *b.step_time_s - 1;
      if (growth > max_growth) {
        add_failure(r, "best step time slower by " + percent(growth) + " (" + fixed(*b.step_time_s, 3) + " -> " +
                           fixed(*r.step_time_s, 3) + " s, allowed " + percent(max_growth) + ")");
      }
    }
  }
}

}  // namespace meshfit
