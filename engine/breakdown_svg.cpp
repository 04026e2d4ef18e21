#include "engine/breakdown_svg.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>
#include <utility>
#include <vector>

#include "engine/memory_terms.hpp"
#include "engine/text_format.hpp"
#include "engine/time_terms.hpp"

namespace meshfit {

namespace {

// Distinct colours for the terms, in report order (cycled if there are more).
const char* const kColours[] = {"#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728",
                                "#ff9896", "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2",
                                "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5"};

constexpr double kLeft = 70, kWidth = 640, kRow = 26;

// A round step for an axis over [0, hi] with about five ticks: 1, 2 or 5 times a power of ten.
double tick_step(double hi) {
  const double raw = hi / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

// The axis under the bars, from 0 to `hi` in `unit`, at height y.
void write_axis(std::ostringstream& o, double hi, double y, const char* unit) {
  const double step = tick_step(hi);
  o << "<g class=\"axis\" font-size=\"10\" fill=\"#333\">\n<line x1=\"" << kLeft << "\" y1=\"" << y << "\" x2=\""
    << kLeft + kWidth << "\" y2=\"" << y << "\" stroke=\"#333\"/>\n";
  for (double v = 0; v <= hi * 1.0001; v += step) {
    const double x = kLeft + v / hi * kWidth;
    o << "<line x1=\"" << fixed(x, 1) << "\" y1=\"" << y << "\" x2=\"" << fixed(x, 1) << "\" y2=\"" << y + 4
      << "\" stroke=\"#333\"/><text x=\"" << fixed(x, 1) << "\" y=\"" << y + 15 << "\" text-anchor=\"middle\">"
      << fixed(v, step < 1 ? (step < 0.1 ? 3 : 2) : 0) << "</text>\n";
  }
  o << "<text x=\"" << kLeft + kWidth / 2 << "\" y=\"" << y + 30 << "\" text-anchor=\"middle\">" << unit
    << "</text>\n</g>\n";
}

// Names seen so far, so that one term keeps its colour on every bar.
struct Palette {
  std::vector<std::string> names;
  const char* colour(const std::string& name) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) it = names.insert(names.end(), name);
    return kColours[static_cast<std::size_t>(it - names.begin()) % std::size(kColours)];
  }
  std::string legend() const {
    std::ostringstream o;
    o << "<p class=\"legend\">";
    for (std::size_t i = 0; i < names.size(); ++i) {
      o << "<span><i style=\"background:" << kColours[i % std::size(kColours)] << "\"></i>" << xml_escape(names[i])
        << "</span> ";
    }
    o << "</p>\n";
    return o.str();
  }
};

// One bar of (name, value) segments at height y, `scale` units across the width; returns its end.
double write_bar(std::ostringstream& o, Palette& p, const std::vector<std::pair<std::string, double>>& segments,
                 double scale, double y, const std::string& what, double shown_unit, const char* unit) {
  double x = kLeft;
  for (const auto& [name, value] : segments) {
    if (value <= 0) continue;
    const double w = value / scale * kWidth;
    o << "<rect x=\"" << fixed(x, 1) << "\" y=\"" << y << "\" width=\"" << fixed(w, 2) << "\" height=\"20\" fill=\""
      << p.colour(name) << "\"><title>" << xml_escape(what) << ": " << xml_escape(name) << " "
      << fixed(value / shown_unit, 3) << ' ' << unit << "</title></rect>\n";
    x += w;
  }
  return x;
}

}  // namespace

std::string stage_memory_bars(const MemoryReport& mem) {
  const double scale = std::max(mem.budget, mem.peak) * 1.05;
  const double bars_end = 20 + kRow * static_cast<double>(mem.stages.size());
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"stage-bars\" width=\"" << kLeft + kWidth + 90
    << "\" height=\"" << bars_end + 40 << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  Palette p;
  for (const auto& st : mem.stages) {
    const double y = 20 + kRow * static_cast<double>(st.stage);
    const std::string what = "stage " + std::to_string(st.stage);
    o << "<text x=\"" << kLeft - 8 << "\" y=\"" << y + 15 << "\" text-anchor=\"end\">" << what << "</text>\n";
    std::vector<std::pair<std::string, double>> terms;
    for (auto& [name, bytes] : stage_terms(st)) terms.emplace_back(name, bytes);
    const double end = write_bar(o, p, terms, scale, y, what, kGiB, "GiB");
    o << "<text x=\"" << fixed(end + 4, 1) << "\" y=\"" << y + 15 << "\">" << fixed(st.device / kGiB, 2)
      << " GiB</text>\n";
  }
  const double bx = kLeft + mem.budget / scale * kWidth;
  o << "<line class=\"budget\" x1=\"" << fixed(bx, 1) << "\" y1=\"12\" x2=\"" << fixed(bx, 1) << "\" y2=\"" << bars_end
    << "\" stroke=\"#c0392b\" stroke-dasharray=\"5 3\"/>\n";
  o << "<text x=\"" << fixed(bx, 1) << "\" y=\"10\" text-anchor=\"middle\" fill=\"#c0392b\">budget "
    << fixed(mem.budget / kGiB, 1) << " GiB</text>\n";
  write_axis(o, scale / kGiB, bars_end + 2, "memory per device (GiB)");
  o << "</svg>\n";
  return o.str() + p.legend();
}

std::string step_time_bar(const TimeReport& t) {
  const double scale = t.step * 1.05;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"time-bar\" width=\"" << kLeft + kWidth + 90
    << "\" height=\"86\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<text x=\"" << kLeft - 8 << "\" y=\"27\" text-anchor=\"end\">step</text>\n";
  std::vector<std::pair<std::string, double>> terms;
  for (const auto& [name, seconds] : time_terms(t)) terms.emplace_back(name, seconds);
  Palette p;
  const double end = write_bar(o, p, terms, scale, 12, "step", 1, "s");
  o << "<text x=\"" << fixed(end + 4, 1) << "\" y=\"27\">" << fixed(t.step, 3) << " s</text>\n";
  write_axis(o, scale, 36, "seconds per step");
  o << "</svg>\n";
  return o.str() + p.legend();
}

}  // namespace meshfit
