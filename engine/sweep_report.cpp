#include "engine/sweep_report.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>
#include <utility>

#include "engine/text_format.hpp"
#include "engine/utf8_text.hpp"

namespace meshfit {

namespace {

const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr double kW = 760, kH = 380, kLeft = 70, kRight = 200, kTop = 30, kBottom = 50;

std::string text(const std::string& s) { return xml_escape(printable(s)); }

// One chart: the points of one (seq, global batch), a line per (model, device).
void write_chart(std::ostringstream& o, const std::vector<const PointResult*>& pts) {
  std::vector<std::pair<std::string, std::string>> lines;
  double n_lo = INFINITY, n_hi = 0, t_lo = INFINITY, t_hi = 0;
  for (const auto* p : pts) {
    const auto key = std::make_pair(p->model, p->device);
    if (std::find(lines.begin(), lines.end(), key) == lines.end()) lines.push_back(key);
    n_lo = std::min(n_lo, static_cast<double>(p->devices));
    n_hi = std::max(n_hi, static_cast<double>(p->devices));
    if (p->step_s) {
      t_lo = std::min(t_lo, *p->step_s);
      t_hi = std::max(t_hi, *p->step_s);
    }
  }
  if (!(t_hi > 0)) {
    o << "<p>No point of this chart has a fitting strategy.</p>\n";
    return;
  }
  if (n_hi <= n_lo) n_hi = n_lo * 2;
  if (t_hi <= t_lo * 1.01) {
    t_lo /= 1.5;
    t_hi *= 1.5;
  }
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto X = [&](double n) {
    return kLeft + (std::log2(n) - std::log2(n_lo)) / (std::log2(n_hi) - std::log2(n_lo)) * pw;
  };
  auto Y = [&](double t) {
    return kTop + ph -
           (std::log10(t) - std::log10(t_lo / 1.1)) / (std::log10(t_hi * 1.1) - std::log10(t_lo / 1.1)) * ph;
  };
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<rect width=\"" << kW << "\" height=\"" << kH << "\" fill=\"white\"/>\n";
  o << "<line x1=\"" << kLeft << "\" y1=\"" << kTop + ph << "\" x2=\"" << kLeft + pw << "\" y2=\"" << kTop + ph
    << "\" stroke=\"#333\"/><line x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\""
    << kTop + ph << "\" stroke=\"#333\"/>\n";
  std::vector<std::int64_t> counts;
  counts.reserve(pts.size());
  for (const auto* p : pts) counts.push_back(p->devices);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (auto n : counts) {
    o << "<text x=\"" << fixed(X(static_cast<double>(n)), 1) << "\" y=\"" << kTop + ph + 16
      << "\" text-anchor=\"middle\">" << n << "</text>\n";
  }
  for (int d = static_cast<int>(std::floor(std::log10(t_lo / 1.1))); d <= std::ceil(std::log10(t_hi * 1.1)); ++d) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double t = m * std::pow(10.0, d);
      if (t < t_lo / 1.1 || t > t_hi * 1.1) continue;
      o << "<line x1=\"" << kLeft << "\" y1=\"" << fixed(Y(t), 1) << "\" x2=\"" << kLeft + pw << "\" y2=\""
        << fixed(Y(t), 1) << "\" stroke=\"#eee\"/><text x=\"" << kLeft - 6 << "\" y=\"" << fixed(Y(t) + 4, 1)
        << "\" text-anchor=\"end\">" << t << "</text>\n";
    }
  }
  o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kH - 12
    << "\" text-anchor=\"middle\">devices (log scale)</text>\n";
  o << "<text x=\"16\" y=\"" << kTop + ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " << kTop + ph / 2
    << ")\">best step time (s, log scale)</text>\n";
  for (std::size_t li = 0; li < lines.size(); ++li) {
    const char* colour = kColours[li % std::size(kColours)];
    std::ostringstream path, marks;
    for (const auto* p : pts) {
      if (std::make_pair(p->model, p->device) != lines[li] || !p->step_s) continue;
      const double x = X(static_cast<double>(p->devices)), y = Y(*p->step_s);
      path << fixed(x, 1) << ',' << fixed(y, 1) << ' ';
      marks << "<circle cx=\"" << fixed(x, 1) << "\" cy=\"" << fixed(y, 1) << "\" r=\"3.5\" fill=\"" << colour
            << "\"><title>" << text(p->model) << " on " << p->devices << " x " << text(p->device) << ": "
            << fixed(*p->step_s, 3) << " s/step, " << text(p->strategy) << "</title></circle>\n";
    }
    o << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\"" << path.str() << "\"/>\n"
      << marks.str();
    const double ly = kTop + 14 + 16 * static_cast<double>(li);
    o << "<line x1=\"" << kLeft + pw + 12 << "\" y1=\"" << ly << "\" x2=\"" << kLeft + pw + 28 << "\" y2=\"" << ly
      << "\" stroke=\"" << colour << "\" stroke-width=\"2\"/><text x=\"" << kLeft + pw + 32 << "\" y=\"" << ly + 4
      << "\">" << text(lines[li].first) << " / " << text(lines[li].second) << "</text>\n";
  }
  o << "</svg>\n";
}

}  // namespace

std::string sweep_html(const std::string& source, const std::vector<PointResult>& points, bool complete) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>meshfit sweep: " << text(source)
    << "</title>\n<style>\nbody{font-family:sans-serif;margin:2em;color:#222;max-width:1100px}\n"
       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\n</style>\n"
       "</head>\n<body>\n<h1>meshfit sweep: "
    << text(source) << "</h1>\n";
  if (!complete) o << "<p><strong>INCOMPLETE: only the points searched are shown.</strong></p>\n";
  std::vector<std::pair<std::int64_t, std::int64_t>> panels;  // (seq, global batch), first-seen order
  for (const auto& p : points) {
    const auto key = std::make_pair(p.seq, p.global_batch);
    if (std::find(panels.begin(), panels.end(), key) == panels.end()) panels.push_back(key);
  }
  for (const auto& [seq, gb] : panels) {
    o << "<h2>sequence " << seq << ", global batch " << gb << "</h2>\n";
    std::vector<const PointResult*> pts;
    for (const auto& p : points) {
      if (p.seq == seq && p.global_batch == gb) pts.push_back(&p);
    }
    write_chart(o, pts);
  }
  o << "<h2>Smallest device count with a fitting strategy</h2>\n<table>\n<tr><th>model</th><th>device</th><th>seq</th>"
       "<th>global batch</th><th>devices</th></tr>\n";
  for (const auto& s : smallest_counts(points)) {
    o << "<tr><td>" << text(s.model) << "</td><td>" << text(s.device) << "</td><td>" << s.seq << "</td><td>"
      << s.global_batch << "</td><td>" << (s.devices ? std::to_string(*s.devices) : std::string("none"))
      << "</td></tr>\n";
  }
  o << "</table>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace meshfit
