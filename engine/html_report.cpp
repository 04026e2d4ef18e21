#include "engine/html_report.hpp"

#include <sstream>

#include "engine/breakdown_svg.hpp"
#include "engine/dimension_columns.hpp"
#include "engine/memory_terms.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"
#include "engine/time_terms.hpp"

namespace meshfit {

namespace {

const char* const kStyle =
    "body{font-family:sans-serif;margin:2em;color:#222;max-width:1100px}\n"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\n"
    "td.s,th.s{text-align:left;font-family:monospace}\n"
    "#front th{cursor:pointer;background:#f4f4f4}#front th[data-dir=asc]::after{content:' \\25B2'}\n"
    "#front th[data-dir=desc]::after{content:' \\25BC'}#front tbody tr{cursor:pointer}\n"
    "#front tbody tr:hover{background:#fdf3e7}#front tbody tr.sel{background:#fbe0c0}\n"
    "g.pt{cursor:pointer}g.pt.sel circle{fill:#c0392b;r:6px}\n"
    ".legend span{margin-right:1em;white-space:nowrap}\n"
    ".legend i{display:inline-block;width:10px;height:10px;margin-right:4px}\n";

// The page's behaviour, inline (no network): sort the front table by a heading's column (numbers
// by value, text by text; again to reverse), and show the breakdown of the row or chart point
// clicked. In CDATA so that the page stays well-formed XML.
const char* const kScript = R"JS(//<![CDATA[
(function () {
  var body = document.querySelector('#front tbody');
  if (!body) return;
  function show(i) {
    document.querySelectorAll('section.detail').forEach(function (s) { s.hidden = s.dataset.i !== i; });
    body.querySelectorAll('tr').forEach(function (r) { r.classList.toggle('sel', r.dataset.i === i); });
    document.querySelectorAll('g.pt').forEach(function (g) { g.classList.toggle('sel', g.dataset.front === i); });
  }
  body.querySelectorAll('tr').forEach(function (r) {
    r.addEventListener('click', function () { show(r.dataset.i); });
  });
  document.querySelectorAll('g.pt').forEach(function (g) {
    g.addEventListener('click', function () { show(g.dataset.front); });
  });
  function key(row, col) {
    var c = row.cells[col], v = c.dataset.v !== undefined ? c.dataset.v : c.textContent;
    var n = Number(v);
    return v !== '' && !isNaN(n) ? n : v;
  }
  document.querySelectorAll('#front thead th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var asc = th.dataset.dir !== 'asc';
      document.querySelectorAll('#front thead th').forEach(function (h) { delete h.dataset.dir; });
      th.dataset.dir = asc ? 'asc' : 'desc';
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, col), y = key(b, col), d;
        if (typeof x === 'number' && typeof y === 'number') d = x - y;
        else d = String(x).localeCompare(String(y));
        return (asc ? d : -d) || Number(a.dataset.i) - Number(b.dataset.i);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
})();
//]]>)JS";

void write_inputs(std::ostringstream& o, const Model& m, const Cluster& c, const Run& run, const SearchResult& r) {
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
}

// A numeric cell: shown rounded, sorted by its full value.
std::string number_cell(double v, const std::string& shown) {
  std::ostringstream o;
  o.precision(17);
  o << "<td data-v=\"" << v << "\">" << shown << "</td>";
  return o.str();
}

void write_front_table(std::ostringstream& o, const SearchResult& r) {
  std::vector<Strategy> strategies;
  for (const auto& x : r.front) strategies.push_back(x.strategy);
  const DimColumns cols = dim_columns(strategies, false);
  if (!cols.common.empty()) o << "<p>Every strategy below has " << xml_escape(cols.common) << ".</p>\n";
  o << "<p>Click a heading to sort by it; click a row or a point of the chart to see its breakdown (hover a row for "
       "its strategy string).</p>\n";
  o << "<table id=\"front\">\n<thead><tr><th>#</th>";
  const std::vector<StrategyDim> names = strategy_dims(Strategy{});
  for (std::size_t k : cols.shown) o << "<th>" << xml_escape(column_label(names[k].key)) << "</th>";
  o << "<th>step (s)</th><th>peak (GiB)</th><th>stage</th><th>tokens/s/device</th><th>MFU</th></tr></thead>\n"
       "<tbody>\n";
  for (std::size_t i = 0; i < r.front.size(); ++i) {
    const auto& f = r.front[i];
    const std::vector<StrategyDim> dims = strategy_dims(f.strategy);
    o << "<tr data-i=\"" << i + 1 << "\" title=\"" << xml_escape(strategy_to_string(f.strategy)) << "\"><td>" << i + 1
      << "</td>";
    for (std::size_t k : cols.shown) o << "<td>" << xml_escape(dimension_cell(f.strategy, dims[k], false)) << "</td>";
    o << number_cell(f.step_s, fixed(f.step_s, 3)) << number_cell(f.peak_bytes, fixed(f.peak_bytes / kGiB, 2)) << "<td>"
      << f.peak_stage << "</td>" << number_cell(f.tokens_per_sec_per_device, fixed(f.tokens_per_sec_per_device, 0))
      << number_cell(f.mfu, fixed(100 * f.mfu, 1) + "%") << "</tr>\n";
  }
  o << "</tbody>\n</table>\n";
}

// One front row's breakdown: its stages' memory and its step time, hidden but for the fastest.
void write_detail(std::ostringstream& o, std::size_t i, const ScoredStrategy& f, const FrontDetail& d) {
  o << "<section class=\"detail\" data-i=\"" << i + 1 << "\"" << (i == 0 ? "" : " hidden=\"hidden\"") << ">\n";
  o << "<h2>#" << i + 1 << ": <code>" << xml_escape(strategy_to_string(f.strategy)) << "</code></h2>\n";
  o << "<h3>Memory per stage: peak " << fixed(d.memory.peak / kGiB, 2) << " GiB on stage " << d.memory.peak_stage
    << "</h3>\n";
  o << stage_memory_bars(d.memory);
  o << "<h3>Step time: " << fixed(d.time.step, 3) << " s, " << fixed(d.time.tokens_per_sec_per_device, 0)
    << " tokens/s per device, MFU " << fixed(100 * d.time.mfu, 1) << "%</h3>\n";
  o << step_time_bar(d.time);
  o << "<table class=\"time-terms\">\n<tr><th class=\"s\">term</th><th>seconds</th><th>share</th></tr>\n";
  for (const auto& [name, seconds] : time_terms(d.time)) {
    if (seconds == 0) continue;
    o << "<tr><td class=\"s\">" << name << "</td>" << number_cell(seconds, fixed(seconds, 4)) << "<td>"
      << fixed(100 * seconds / d.time.step, 1) << "%</td></tr>\n";
  }
  o << "</table>\n</section>\n";
}

}  // namespace

std::string html_report(const Model& m, const Cluster& c, const Run& run, const SearchResult& r,
                        const std::vector<FrontDetail>& details, const std::string& chart_svg) {
  std::ostringstream o;
  const std::string title = "meshfit: " + m.name + " on " + std::to_string(c.devices) + " x " + c.device.name;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" << xml_escape(title)
    << "</title>\n<style>\n"
    << kStyle << "</style>\n</head>\n<body>\n";
  o << "<h1>" << xml_escape(title) << "</h1>\n";
  write_inputs(o, m, c, run, r);
  if (r.interrupted)
    o << "<p><strong>Interrupted: these results cover only the part of the space searched.</strong></p>\n";
  o << "<h2>Pareto front</h2>\n";
  if (r.front.empty()) {
    o << "<p>Nothing fits in the budget.</p>\n";
  } else {
    write_front_table(o, r);
  }
  o << "<h2>The search</h2>\n";
  // The chart inline: without its XML declaration, which HTML does not take.
  const std::size_t start = chart_svg.rfind("<?xml", 0) == 0 ? chart_svg.find("?>") + 2 : 0;
  o << chart_svg.substr(start);
  for (std::size_t i = 0; i < r.front.size() && i < details.size(); ++i) write_detail(o, i, r.front[i], details[i]);
  o << "<script>\n" << kScript << "\n</script>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace meshfit
