#include "engine/uncertainty.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "engine/embedded_presets.hpp"
#include "engine/text_format.hpp"
#include "engine/utf8_text.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

namespace {

// Six decimals: the file reads back to the same bands and stays the same across platforms.
std::string ratio_text(const std::optional<double>& v) {
  if (!v) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", *v);
  return buf;
}

}  // namespace

Family family_of(const Model& m, const Run& run, const Cluster& c, const Strategy& s) {
  return {to_string(run.profile.framework), m.is_moe(), to_string(s.recompute), c.device.generation};
}

std::string describe(const Family& f) {
  return f.framework + " " + (f.moe ? "MoE" : "dense") + " " + f.recompute + " " + f.generation;
}

double Band::quantile(double q) const {
  if (ratios.empty()) return 1;
  // Hyndman–Fan type 6, the position (n + 1)·q: for a new case of the same family, the k-th of n
  // sorted ratios is exceeded with probability 1 − k/(n + 1) (order statistics of exchangeable
  // draws; the distribution-free prediction interval). Type 7's (n − 1)·q narrows a band made of
  // few cases: p10–p90 of 10 residuals held about 65 % of new ones, not 80 %.
  const double h =
      std::clamp((static_cast<double>(ratios.size()) + 1) * q - 1, 0.0, static_cast<double>(ratios.size()) - 1);
  const auto i = static_cast<std::size_t>(std::floor(h));
  if (i + 1 >= ratios.size()) return ratios.back();
  return ratios[i] + (h - static_cast<double>(i)) * (ratios[i + 1] - ratios[i]);
}

double Band::likely(double q) const {
  const double median = quantile(0.5);
  return median * std::pow(quantile(q) / median, widening);
}

Band band_for(const std::vector<Residual>& residuals, const Family& f, Quantity q, double widening) {
  // The levels from the family itself to every case, each with the words that name it.
  struct Level {
    std::function<bool(const Family&)> in;
    std::string name;
  };
  const std::string kind = f.moe ? "MoE" : "dense";
  const std::vector<Level> levels = {
      {[&](const Family& g) { return g == f; }, describe(f)},
      {[&](const Family& g) { return g.framework == f.framework && g.moe == f.moe && g.recompute == f.recompute; },
       f.framework + " " + kind + " " + f.recompute},
      {[&](const Family& g) { return g.framework == f.framework && g.moe == f.moe; }, f.framework + " " + kind},
      {[&](const Family& g) { return g.framework == f.framework; }, f.framework},
      {[](const Family&) { return true; }, "measured"},
  };
  Band b;
  for (const auto& level : levels) {
    std::vector<double> ratios;
    for (const auto& r : residuals) {
      const auto& v = q == Quantity::memory ? r.memory : r.step_time;
      if (v && level.in(r.family)) ratios.push_back(*v);
    }
    if (static_cast<std::int64_t>(ratios.size()) >= kMinFamilyCases || &level == &levels.back()) {
      std::sort(ratios.begin(), ratios.end());
      b.ratios = std::move(ratios);
      b.cases = static_cast<std::int64_t>(b.ratios.size());
      b.basis = std::to_string(b.cases) + " " + level.name + " cases";
      if (&level != &levels.front() && b.cases > 0) {
        b.widening = widening;
        if (widening != 1) b.basis += ", widened x" + fixed(widening, 2) + " for an unmeasured family";
      }
      break;
    }
  }
  b.lo = b.likely(0.10);
  b.hi = b.likely(0.90);
  return b;
}

double borrowed_widening(const std::vector<Residual>& residuals, Quantity q) {
  struct Trial {
    double ratio, median, lo, hi;
  };
  std::vector<Trial> trials;
  for (const auto& r : residuals) {
    const auto& v = q == Quantity::memory ? r.memory : r.step_time;
    if (!v) continue;
    std::vector<Residual> others;
    for (const auto& o : residuals) {
      if (!(o.family == r.family)) others.push_back(o);
    }
    const Band b = band_for(others, r.family, q);
    if (b.cases == 0) continue;
    trials.push_back({*v, b.quantile(0.5), b.quantile(0.10), b.quantile(0.90)});
  }
  if (trials.empty()) return 1;
  constexpr double kStep = 0.25, kMost = 5;
  double w = 1;
  for (; w < kMost; w += kStep) {
    std::size_t inside = 0;
    for (const auto& t : trials) {
      if (t.ratio >= t.median * std::pow(t.lo / t.median, w) && t.ratio <= t.median * std::pow(t.hi / t.median, w))
        ++inside;
    }
    if (static_cast<double>(inside) >= kBorrowedCoverage * static_cast<double>(trials.size())) break;
  }
  return w;
}

Band memory_band(const Model& m, const Run& run, const Cluster& c, const Strategy& s) {
  return band_for(bundled_residuals(), family_of(m, run, c, s), Quantity::memory, bundled_widening(Quantity::memory));
}

Band step_time_band(const Model& m, const Run& run, const Cluster& c, const Strategy& s) {
  return band_for(bundled_residuals(), family_of(m, run, c, s), Quantity::step_time,
                  bundled_widening(Quantity::step_time));
}

std::string residuals_yaml(const std::vector<Residual>& residuals, const std::vector<std::string>& sources) {
  std::ostringstream o;
  o << "# Validation residuals, measured / estimate, of the bundled measured runs: the bands every\n"
       "# estimate carries (engine/uncertainty.hpp). Written by `meshfit validate --write-residuals`;\n"
       "# regenerate after any change to the estimators (a test compares this file with it).\n";
  o << "sources:\n";
  for (const auto& s : sources) o << "  - " << s << "\n";
  o << "residuals:\n";
  for (const auto& r : residuals) {
    std::string id = r.id;  // single-quoted: a quote doubled
    for (std::size_t at = id.find('\''); at != std::string::npos; at = id.find('\'', at + 2)) id.insert(at, "'");
    o << "  - {id: '" << id << "', framework: " << r.family.framework << ", moe: " << (r.family.moe ? "true" : "false")
      << ", recompute: " << r.family.recompute << ", generation: " << r.family.generation
      << ", memory: " << ratio_text(r.memory) << ", step_time: " << ratio_text(r.step_time) << "}\n";
  }
  return o.str();
}

std::vector<Residual> residuals_from_yaml(const std::string& text, const std::string& source) {
  const YAML::Node doc = parse_yaml_text(text, source);
  const Fields top(doc, source);
  const YAML::Node list = top.raw("residuals");
  if (!list.IsSequence()) top.fail("residuals", "expected a list");
  std::vector<Residual> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Fields f(list[i], source, "residuals[" + std::to_string(i) + "]");
    Residual r;
    r.id = f.optional_string("id").value_or("");
    r.family.framework = f.optional_string("framework").value_or("");
    r.family.moe = f.optional_bool("moe").value_or(false);
    r.family.recompute = f.optional_string("recompute").value_or("none");
    r.family.generation = f.optional_string("generation").value_or("other");
    r.memory = f.optional_number("memory", 1e-3, 1e3);
    r.step_time = f.optional_number("step_time", 1e-3, 1e3);
    out.push_back(std::move(r));
  }
  return out;
}

const std::vector<Residual>& bundled_residuals() {
  static const std::vector<Residual> residuals = [] {
    for (const auto& f : embedded_files()) {
      if (f.path == "uncertainty/residuals.yaml") return residuals_from_yaml(std::string(f.content), "residuals.yaml");
    }
    return std::vector<Residual>{};
  }();
  return residuals;
}

double bundled_widening(Quantity q) {
  static const double memory = borrowed_widening(bundled_residuals(), Quantity::memory);
  static const double step_time = borrowed_widening(bundled_residuals(), Quantity::step_time);
  return q == Quantity::memory ? memory : step_time;
}

std::optional<double> parse_fit_margin(const std::optional<std::string>& text, const InputOrigin& origin) {
  if (!text || *text == "none") return std::nullopt;
  const std::string& t = *text;
  const bool digits = t.size() == 3 && (t[0] == 'p' || t[0] == 'P') && std::isdigit(static_cast<unsigned char>(t[1])) &&
                      std::isdigit(static_cast<unsigned char>(t[2]));
  const int n = digits ? (t[1] - '0') * 10 + (t[2] - '0') : 0;
  if (n < 50) {
    throw InputError(origin.source, origin.field("--fit-margin"),
                     "expected none or a percentile p50..p99 (e.g. p90), got " + quoted_text(t));
  }
  return n / 100.0;
}

void apply_fit_margin(Run& run, const Model& m, const Cluster& c, std::optional<double> quantile) {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    Strategy s;
    s.recompute = r;
    // A margin, never a loosening: where the family's runs measured below their estimates the
    // estimate itself must still fit (the factor is at least 1).
    run.options.fit_factor[static_cast<std::size_t>(r)] =
        quantile ? std::max(1.0, band_for(bundled_residuals(), family_of(m, run, c, s), Quantity::memory,
                                          bundled_widening(Quantity::memory))
                                     .likely(*quantile))
                 : 1;
  }
}

void write_band_json(JsonWriter& j, const std::string& key, double value, const Band& b) {
  j.key(key).begin_object().field("p10", value * b.lo).field("p90", value * b.hi).field("basis", b.basis).end_object();
}

std::string likely_range(double value, const Band& b, int decimals) {
  return fixed(value * b.lo, decimals) + "\u2013" + fixed(value * b.hi, decimals);
}

}  // namespace meshfit
