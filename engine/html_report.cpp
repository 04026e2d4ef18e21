#include "engine/html_report.hpp"

#include <algorithm>
#include <sstream>

#include "engine/front_chart_svg.hpp"
#include "engine/memory_terms.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"

namespace meshfit {

namespace {

// Distinct colours for the memory terms, in report order (cycled if there are more).
const char* const kColours[] = {"#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728",
                                "#ff9896", "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2",
                                "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5"};

// The stage bars: one row per stage, its terms stacked left to right, the budget as a line.
std::string stage_bars_svg(const MemoryReport& mem) {
  const double scale_bytes = std::max(mem.budget, mem.peak) * 1.05;
  const double left = 70, width = 640, row = 26;
  const double height = 40 + row * static_cast<double>(mem.stages.size()) + 30;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + 20 << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  std::vector<std::string> names;
  for (const auto& st : mem.stages) {
    const double y = 20 + row * static_cast<double>(st.stage);
    o << "<text x=\"" << left - 8 << "\" y=\"" << y + 15 << "\" text-anchor=\"end\">stage " << st.stage << "</text>\n";
    double x = left;
    for (const auto& [name, bytes] : stage_terms(st)) {
      if (bytes <= 0) continue;
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) it = names.insert(names.end(), name);
      const auto colour = kColours[static_cast<std::size_t>(it - names.begin()) % std::size(kColours)];
      const double w = bytes / scale_bytes * width;
      o << "<rect x=\"" << fixed(x, 1) << "\" y=\"" << y << "\" width=\"" << fixed(w, 2) << "\" height=\"20\" fill=\""
        << colour << "\"><title>stage " << st.stage << ": " << xml_escape(name) << " " << fixed(bytes / kGiB, 2)
        << " GiB</title></rect>\n";
      x += w;
    }
    o << "<text x=\"" << fixed(x + 4, 1) << "\" y=\"" << y + 15 << "\">" << fixed(st.device / kGiB, 2)
      << " GiB</text>\n";
  }
  const double bx = left + mem.budget / scale_bytes * width;
  o << "<line x1=\"" << fixed(bx, 1) << "\" y1=\"12\" x2=\"" << fixed(bx, 1) << "\" y2=\"" << height - 24
    << "\" stroke=\"#c0392b\" stroke-dasharray=\"5 3\"/>\n";
  o << "<text x=\"" << fixed(bx, 1) << "\" y=\"" << height - 10 << "\" text-anchor=\"middle\" fill=\"#c0392b\">budget "
    << fixed(mem.budget / kGiB, 1) << " GiB</text>\n";
  o << "</svg>\n";
  // The legend, as HTML beside it.
  std::ostringstream legend;
  legend << "<p class=\"legend\">";
  for (std::size_t i = 0; i < names.size(); ++i) {
    legend << "<span><i style=\"background:" << kColours[i % std::size(kColours)] << "\"></i>" << xml_escape(names[i])
           << "</span> ";
  }
  legend << "</p>\n";
  return o.str() + legend.str();
}

}  // namespace

std::string html_report(const Model& m, const Cluster& c, const Run& run, const SearchResult& r,
                        const MemoryReport& chosen, const std::string& chart_svg) {
  std::ostringstream o;
  const std::string title = "meshfit: " + m.name + " on " + std::to_string(c.devices) + " x " + c.device.name;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" << xml_escape(title)
    << "</title>\n"
    << "<style>\nbody{font-family:sans-serif;margin:2em;color:#222;max-width:1100px}\n"
       "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\n"
       "td.s,th.s{text-align:left;font-family:monospace}\n.legend span{margin-right:1em;white-space:nowrap}\n"
       ".legend i{display:inline-block;width:10px;height:10px;margin-right:4px}\n</style>\n</head>\n<body>\n";
  o << "<h1>" << xml_escape(title) << "</h1>\n";
  o << "<h2>Inputs</h2>\n<table>\n";
  auto input = [&](const std::string& k, const std::string& v) {
    o << "<tr><th class=\"s\">" << xml_escape(k) << "</th><td class=\"s\">" << xml_escape(v) << "</td></tr>\n";
  };
  input("model", m.name + " (" + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) + ")");
  input("devices",
        std::to_string(c.devices) + " x " + c.device.name + ", " + fixed(c.device.capacity / kGiB, 1) + " GiB each");
  input("sequence length", std::to_string(run.seq));
  input("global batch", std::to_string(run.global_batch) + " sequences");
  input("memory budget", fixed(r.budget / kGiB, 2) + " GiB per device");
  input("strategies", with_commas(r.enumerated) + " enumerated, " + with_commas(r.valid) + " valid, " +
                          with_commas(r.fitting) + " fitting, " + std::to_string(r.front.size()) + " on the front");
  o << "</table>\n";
  if (r.interrupted)
    o << "<p><strong>Interrupted: these results cover only the part of the space searched.</strong></p>\n";
  o << "<h2>Pareto front</h2>\n";
  if (r.front.empty()) {
    o << "<p>Nothing fits in the budget.</p>\n";
  } else {
    o << "<table>\n<tr><th>#</th><th class=\"s\">strategy</th><th>step (s)</th><th>peak (GiB)</th><th>stage</th>"
         "<th>tokens/s/device</th><th>MFU</th></tr>\n";
    for (std::size_t i = 0; i < r.front.size(); ++i) {
      const auto& f = r.front[i];
      o << "<tr><td>" << i + 1 << "</td><td class=\"s\">" << xml_escape(strategy_to_string(f.strategy)) << "</td><td>"
        << fixed(f.step_s, 3) << "</td><td>" << fixed(f.peak_bytes / kGiB, 2) << "</td><td>" << f.peak_stage
        << "</td><td>" << fixed(f.tokens_per_sec_per_device, 0) << "</td><td>" << fixed(100 * f.mfu, 1)
        << "%</td></tr>\n";
    }
    o << "</table>\n";
  }
  o << "<h2>The search</h2>\n";
  // The chart inline: without its XML declaration, which HTML does not take.
  const std::size_t start = chart_svg.rfind("<?xml", 0) == 0 ? chart_svg.find("?>") + 2 : 0;
  o << chart_svg.substr(start);
  if (!r.front.empty()) {
    o << "<h2>Memory per stage of the fastest: <code>" << xml_escape(strategy_to_string(r.front.front().strategy))
      << "</code></h2>\n";
    o << stage_bars_svg(chosen);
  }
  o << "</body>\n</html>\n";
  return o.str();
}

}  // namespace meshfit
