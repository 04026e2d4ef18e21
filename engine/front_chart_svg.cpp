#include "engine/front_chart_svg.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>
#include <sstream>

#include "engine/memory_terms.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"

namespace meshfit {

namespace {

constexpr double kWidth = 860, kHeight = 544;
constexpr double kLeft = 80, kRight = 30, kTop = 50, kBottom = 84;  // the axis title and the legend below

// Tick values for a log axis over [lo, hi]: 1-2-5 steps when it spans few decades.
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  const int d0 = static_cast<int>(std::floor(std::log10(lo))), d1 = static_cast<int>(std::ceil(std::log10(hi)));
  const bool fine = d1 - d0 <= 3;
  for (int d = d0; d <= d1; ++d) {
    for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
      const double v = m * std::pow(10.0, d);
      if (v >= lo * 0.999 && v <= hi * 1.001) ticks.push_back(v);
    }
  }
  return ticks;
}

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The plotted ranges: memory from a little below the smallest point to past the budget (the
// front and the cloud fill the width), step time on a log scale around them.
struct ChartFrame {
  double m_lo = 0, m_hi = 1, t_lo = 0.1, t_hi = 10, m_step = 2;
  double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  double X(double gib) const { return kLeft + (gib - m_lo) / (m_hi - m_lo) * pw; }
  double Y(double s) const {
    return kTop + ph - (std::log10(s) - std::log10(t_lo)) / (std::log10(t_hi) - std::log10(t_lo)) * ph;
  }
};

ChartFrame chart_frame(const SearchResult& r) {
  ChartFrame f;
  const double budget_gib = r.budget / kGiB;
  double t_lo = INFINITY, t_hi = 0, m_lo = budget_gib;
  auto take = [&](double gib, double s) {
    t_lo = std::min(t_lo, s);
    t_hi = std::max(t_hi, s);
    m_lo = std::min(m_lo, gib);
  };
  for (const auto& x : r.front) take(x.peak_bytes / kGiB, x.step_s);
  for (int y = 0; y < FitCloud::kTimeBins && !r.cloud.empty(); ++y) {
    for (int x = 0; x < FitCloud::kMemBins; ++x) {
      if (r.cloud.test(x, y)) take(FitCloud::mem_at(x, r.budget) / kGiB, FitCloud::time_at(y));
    }
  }
  if (t_hi <= 0) {  // nothing fits: a default decade range
    t_lo = 0.1;
    t_hi = 10;
  }
  if (t_hi / t_lo < 2) {
    t_lo /= 1.5;
    t_hi *= 1.5;
  }
  f.t_lo = t_lo / 1.1;
  f.t_hi = t_hi * 1.1;
  f.m_hi = std::max(budget_gib, 1.0) * 1.05;
  const double span = f.m_hi - std::max(0.0, m_lo * 0.9);
  f.m_step = span > 400 ? 100 : span > 160 ? 40 : span > 80 ? 20 : span > 40 ? 10 : span > 16 ? 4 : span > 8 ? 2 : 1;
  f.m_lo = std::max(0.0, std::floor(m_lo * 0.9 / f.m_step) * f.m_step);
  return f;
}

void write_axes(std::ostringstream& o, const ChartFrame& f) {
  o << "<g stroke=\"#333\" fill=\"none\">\n";
  o << "<line x1=\"" << kLeft << "\" y1=\"" << kTop + f.ph << "\" x2=\"" << kLeft + f.pw << "\" y2=\"" << kTop + f.ph
    << "\"/>\n";
  o << "<line x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\"" << kTop + f.ph << "\"/>\n";
  o << "</g>\n<g font-size=\"11\" fill=\"#333\">\n";
  for (double g = f.m_lo; g <= f.m_hi; g += f.m_step) {
    o << "<line x1=\"" << f.X(g) << "\" y1=\"" << kTop + f.ph << "\" x2=\"" << f.X(g) << "\" y2=\"" << kTop + f.ph + 5
      << "\" stroke=\"#333\"/><text x=\"" << f.X(g) << "\" y=\"" << kTop + f.ph + 18 << "\" text-anchor=\"middle\">"
      << number(g) << "</text>\n";
  }
  for (double t : log_ticks(f.t_lo, f.t_hi)) {
    o << "<line x1=\"" << kLeft - 5 << "\" y1=\"" << f.Y(t) << "\" x2=\"" << kLeft + f.pw << "\" y2=\"" << f.Y(t)
      << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 8 << "\" y=\"" << f.Y(t) + 4 << "\" text-anchor=\"end\">"
      << number(t) << "</text>\n";
  }
  o << "</g>\n";
  o << "<text x=\"" << kLeft + f.pw / 2 << "\" y=\"" << kTop + f.ph + 40
    << "\" text-anchor=\"middle\">peak memory per device (GiB)</text>\n";
  o << "<text x=\"18\" y=\"" << kTop + f.ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 18 "
    << kTop + f.ph / 2 << ")\">step time (s, log scale)</text>\n";
}

// What each mark means, in one row under the memory axis's title (clear of every point).
void write_legend(std::ostringstream& o) {
  const double x = kLeft + 60, y = kHeight - 30;
  o << "<g class=\"legend\" font-size=\"11\">\n";
  o << "<circle cx=\"" << x << "\" cy=\"" << y << "\" r=\"2.5\" fill=\"#4a7bd0\" fill-opacity=\"0.5\"/>"
    << "<text x=\"" << x + 10 << "\" y=\"" << y + 4 << "\">fitting strategies (one dot per cell)</text>\n";
  o << "<line x1=\"" << x + 224 << "\" y1=\"" << y << "\" x2=\"" << x + 240 << "\" y2=\"" << y
    << "\" stroke=\"#e67e22\" stroke-width=\"2\"/><circle cx=\"" << x + 232 << "\" cy=\"" << y
    << "\" r=\"3\" fill=\"#e67e22\" stroke=\"#7a3d00\"/><text x=\"" << x + 246 << "\" y=\"" << y + 4
    << "\">Pareto front, numbered fastest first</text>\n";
  o << "<line x1=\"" << x + 470 << "\" y1=\"" << y << "\" x2=\"" << x + 486 << "\" y2=\"" << y
    << "\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/><text x=\"" << x + 492 << "\" y=\"" << y + 4
    << "\">memory budget per device</text>\n";
  o << "</g>\n";
}

// A label box, for the placement below.
struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& b) const { return x0 < b.x1 && b.x0 < x1 && y0 < b.y1 && b.y0 < y1; }
};

// The front's points, each with its number where a place next to it is free of the labels and
// points placed before it (fastest first); a point left without one keeps its number in its
// tooltip, with the strategy.
void write_front(std::ostringstream& o, const SearchResult& r, const ChartFrame& f) {
  std::vector<std::size_t> by_mem(r.front.size());
  for (std::size_t i = 0; i < by_mem.size(); ++i) by_mem[i] = i;
  std::sort(by_mem.begin(), by_mem.end(),
            [&](std::size_t a, std::size_t b) { return r.front[a].mem < r.front[b].mem; });
  if (!r.front.empty()) {
    o << "<polyline fill=\"none\" stroke=\"#e67e22\" stroke-width=\"2\" points=\"";
    for (std::size_t i : by_mem) {
      o << fixed(f.X(r.front[i].peak_bytes / kGiB), 1) << ',' << fixed(f.Y(r.front[i].step_s), 1) << ' ';
    }
    o << "\"/>\n";
  }
  std::vector<Box> taken;
  for (const auto& x : r.front) {
    const double cx = f.X(x.peak_bytes / kGiB), cy = f.Y(x.step_s);
    taken.push_back({cx - 4, cy - 4, cx + 4, cy + 4});
  }
  o << "<g class=\"front\">\n";
  for (std::size_t i = 0; i < r.front.size(); ++i) {
    const auto& x = r.front[i];
    const double cx = f.X(x.peak_bytes / kGiB), cy = f.Y(x.step_s);
    const std::string label = std::to_string(i + 1);
    const double w = 6.0 * static_cast<double>(label.size()), h = 10;
    std::optional<Box> place;
    for (const auto& [dx, dy] : std::initializer_list<std::pair<double, double>>{
             {6, -6}, {6, 12}, {-6 - w, -6}, {-6 - w, 12}, {-w / 2, -10}, {-w / 2, 18}}) {
      const Box b{cx + dx, cy + dy - h, cx + dx + w, cy + dy};
      if (std::none_of(taken.begin(), taken.end(), [&](const Box& t) { return t.overlaps(b); })) {
        place = b;
        break;
      }
    }
    o << "<g class=\"pt\" data-front=\"" << i + 1 << "\"><title>" << i + 1 << ": "
      << xml_escape(strategy_to_string(x.strategy)) << " | " << fixed(x.peak_bytes / kGiB, 2) << " GiB, "
      << fixed(x.step_s, 3) << " s/step</title>"
      << "<circle cx=\"" << fixed(cx, 1) << "\" cy=\"" << fixed(cy, 1)
      << "\" r=\"4\" fill=\"#e67e22\" stroke=\"#7a3d00\"/>";
    if (place) {
      taken.push_back(*place);
      o << "<text x=\"" << fixed(place->x0, 1) << "\" y=\"" << fixed(place->y1, 1) << "\" font-size=\"10\">" << label
        << "</text>";
    }
    o << "</g>\n";
  }
  o << "</g>\n";
}

}  // namespace

std::string front_chart_svg(const SearchResult& r, const std::string& title) {
  const double budget_gib = r.budget / kGiB;
  const ChartFrame f = chart_frame(r);
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<title>" << xml_escape(title) << "</title>\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << kWidth << "\" height=\"" << kHeight << "\" fill=\"white\"/>\n";
  o << "<text x=\"" << kWidth / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" << xml_escape(title)
    << "</text>\n";
  if (r.interrupted) {
    o << "<text x=\"" << kWidth / 2
      << "\" y=\"42\" text-anchor=\"middle\" font-size=\"13\" fill=\"#b00\">"
         "INTERRUPTED: only the part of the space searched is shown</text>\n";
  }
  write_axes(o, f);
  // Every fitting strategy: one faint dot per occupied cell.
  o << "<g fill=\"#4a7bd0\" fill-opacity=\"0.25\">\n";
  for (int y = 0; y < FitCloud::kTimeBins && !r.cloud.empty(); ++y) {
    for (int x = 0; x < FitCloud::kMemBins; ++x) {
      if (!r.cloud.test(x, y)) continue;
      o << "<circle cx=\"" << fixed(f.X(FitCloud::mem_at(x, r.budget) / kGiB), 1) << "\" cy=\""
        << fixed(f.Y(FitCloud::time_at(y)), 1) << "\" r=\"1.6\"/>\n";
    }
  }
  o << "</g>\n";
  // The budget.
  o << "<line x1=\"" << f.X(budget_gib) << "\" y1=\"" << kTop << "\" x2=\"" << f.X(budget_gib) << "\" y2=\""
    << kTop + f.ph << "\" stroke=\"#c0392b\" stroke-dasharray=\"6 4\"/>\n";
  o << "<text x=\"" << f.X(budget_gib) - 4 << "\" y=\"" << kTop + 12
    << "\" text-anchor=\"end\" fill=\"#c0392b\">budget " << fixed(budget_gib, 1) << " GiB</text>\n";
  write_legend(o);
  write_front(o, r, f);
  if (r.front.empty()) {
    o << "<text x=\"" << kLeft + f.pw / 2 << "\" y=\"" << kTop + f.ph / 2
      << "\" text-anchor=\"middle\" font-size=\"16\">nothing fits</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace meshfit
