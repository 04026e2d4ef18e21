#include "engine/front_chart_svg.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engine/memory_terms.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"

namespace meshfit {

namespace {

constexpr double kWidth = 860, kHeight = 520;
constexpr double kLeft = 80, kRight = 30, kTop = 50, kBottom = 60;

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

}  // namespace

std::string front_chart_svg(const SearchResult& r, const std::string& title) {
  const double budget_gib = r.budget / kGiB;
  // Time range: the front and the cloud's occupied cells, padded a little on the log scale.
  double t_lo = INFINITY, t_hi = 0;
  for (const auto& f : r.front) {
    t_lo = std::min(t_lo, f.step_s);
    t_hi = std::max(t_hi, f.step_s);
  }
  for (int y = 0; y < FitCloud::kTimeBins && !r.cloud.empty(); ++y) {
    for (int x = 0; x < FitCloud::kMemBins; ++x) {
      if (!r.cloud.test(x, y)) continue;
      t_lo = std::min(t_lo, FitCloud::time_at(y));
      t_hi = std::max(t_hi, FitCloud::time_at(y));
    }
  }
  const bool any = t_hi > 0;
  if (!any) {
    t_lo = 0.1;
    t_hi = 10;
  }
  if (t_hi / t_lo < 2) {
    t_lo /= 1.5;
    t_hi *= 1.5;
  }
  t_lo /= 1.1;
  t_hi *= 1.1;
  const double m_hi = std::max(budget_gib, 1.0) * 1.08;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto X = [&](double gib) { return kLeft + gib / m_hi * pw; };
  auto Y = [&](double s) {
    return kTop + ph - (std::log10(s) - std::log10(t_lo)) / (std::log10(t_hi) - std::log10(t_lo)) * ph;
  };

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
  // Axes, ticks and grid.
  o << "<g stroke=\"#333\" fill=\"none\">\n";
  o << "<line x1=\"" << kLeft << "\" y1=\"" << kTop + ph << "\" x2=\"" << kLeft + pw << "\" y2=\"" << kTop + ph
    << "\"/>\n";
  o << "<line x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\"" << kTop + ph << "\"/>\n";
  o << "</g>\n<g font-size=\"11\" fill=\"#333\">\n";
  const double m_step = m_hi > 400 ? 100 : m_hi > 160 ? 40 : m_hi > 80 ? 20 : m_hi > 40 ? 10 : m_hi > 16 ? 4 : 2;
  for (double g = 0; g <= m_hi; g += m_step) {
    o << "<line x1=\"" << X(g) << "\" y1=\"" << kTop + ph << "\" x2=\"" << X(g) << "\" y2=\"" << kTop + ph + 5
      << "\" stroke=\"#333\"/><text x=\"" << X(g) << "\" y=\"" << kTop + ph + 18 << "\" text-anchor=\"middle\">"
      << number(g) << "</text>\n";
  }
  for (double t : log_ticks(t_lo, t_hi)) {
    o << "<line x1=\"" << kLeft - 5 << "\" y1=\"" << Y(t) << "\" x2=\"" << kLeft + pw << "\" y2=\"" << Y(t)
      << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 8 << "\" y=\"" << Y(t) + 4 << "\" text-anchor=\"end\">"
      << number(t) << "</text>\n";
  }
  o << "</g>\n";
  o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kHeight - 14
    << "\" text-anchor=\"middle\">peak memory per device (GiB)</text>\n";
  o << "<text x=\"18\" y=\"" << kTop + ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " << kTop + ph / 2
    << ")\">step time (s, log scale)</text>\n";
  // Every fitting strategy: one faint dot per occupied cell.
  o << "<g fill=\"#4a7bd0\" fill-opacity=\"0.25\">\n";
  for (int y = 0; y < FitCloud::kTimeBins && !r.cloud.empty(); ++y) {
    for (int x = 0; x < FitCloud::kMemBins; ++x) {
      if (!r.cloud.test(x, y)) continue;
      o << "<circle cx=\"" << fixed(X(FitCloud::mem_at(x, r.budget) / kGiB), 1) << "\" cy=\""
        << fixed(Y(FitCloud::time_at(y)), 1) << "\" r=\"1.6\"/>\n";
    }
  }
  o << "</g>\n";
  // The budget.
  o << "<line x1=\"" << X(budget_gib) << "\" y1=\"" << kTop << "\" x2=\"" << X(budget_gib) << "\" y2=\"" << kTop + ph
    << "\" stroke=\"#c0392b\" stroke-dasharray=\"6 4\"/>\n";
  o << "<text x=\"" << X(budget_gib) - 4 << "\" y=\"" << kTop + 12 << "\" text-anchor=\"end\" fill=\"#c0392b\">budget "
    << fixed(budget_gib, 1) << " GiB</text>\n";
  // The front: a line by increasing memory, each point numbered (1 = fastest).
  std::vector<std::size_t> by_mem(r.front.size());
  for (std::size_t i = 0; i < by_mem.size(); ++i) by_mem[i] = i;
  std::sort(by_mem.begin(), by_mem.end(),
            [&](std::size_t a, std::size_t b) { return r.front[a].mem < r.front[b].mem; });
  if (!r.front.empty()) {
    o << "<polyline fill=\"none\" stroke=\"#e67e22\" stroke-width=\"2\" points=\"";
    for (std::size_t i : by_mem) {
      o << fixed(X(r.front[i].peak_bytes / kGiB), 1) << ',' << fixed(Y(r.front[i].step_s), 1) << ' ';
    }
    o << "\"/>\n";
  }
  o << "<g class=\"front\">\n";
  for (std::size_t i = 0; i < r.front.size(); ++i) {
    const auto& f = r.front[i];
    const double cx = X(f.peak_bytes / kGiB), cy = Y(f.step_s);
    o << "<g><title>" << i + 1 << ": " << xml_escape(strategy_to_string(f.strategy)) << " | "
      << fixed(f.peak_bytes / kGiB, 2) << " GiB, " << fixed(f.step_s, 3) << " s/step</title>"
      << "<circle cx=\"" << fixed(cx, 1) << "\" cy=\"" << fixed(cy, 1)
      << "\" r=\"4\" fill=\"#e67e22\" stroke=\"#7a3d00\"/>"
      << "<text x=\"" << fixed(cx + 6, 1) << "\" y=\"" << fixed(cy - 6, 1) << "\" font-size=\"10\">" << i + 1
      << "</text></g>\n";
  }
  o << "</g>\n";
  if (r.front.empty()) {
    o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kTop + ph / 2
      << "\" text-anchor=\"middle\" font-size=\"16\">nothing fits</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace meshfit
