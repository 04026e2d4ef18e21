// `meshfit sweep SWEEP.yaml` and `meshfit merge SHARD.json...` (issue 24, first part: one
// process, and shards for batch schedulers): every point of a sweep's axes searched (points in
// parallel, each one's search as `meshfit check` runs it), the fastest fitting strategy per point
// and, per model, device, sequence and batch, the smallest device count with one. `--shard K/N`
// searches every N-th point from the K-th; `merge` joins the shards' JSON into the same output a
// single run writes, byte for byte.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include <tbb/parallel_for.h>
#include <sstream>

#include "engine/atomic_file.hpp"
#include "engine/check_runner.hpp"
#include "engine/cli_options.hpp"
#include "engine/commands.hpp"
#include "engine/input_error.hpp"
#include "engine/interrupt.hpp"
#include "engine/json_writer.hpp"
#include "engine/memory_terms.hpp"
#include "engine/strategy_string.hpp"
#include "engine/sweep_file.hpp"
#include "engine/sweep_report.hpp"
#include "engine/sweep_results.hpp"
#include "engine/text_format.hpp"
#include "engine/utf8_text.hpp"
#include "engine/yaml_fields.hpp"
#include "search/search_workspace.hpp"

namespace meshfit {

namespace {

constexpr int kSweepSchemaVersion = 1;

PointResult result_of(std::int64_t index, const SweepPoint& p, const CheckResult& r) {
  PointResult x;
  x.index = index;
  x.model = p.model;
  x.device = p.device;
  x.devices = p.devices;
  x.seq = p.seq;
  x.global_batch = p.global_batch;
  x.status = r.status == CheckStatus::pass ? "fits" : r.status == CheckStatus::fail ? "none" : "error";
  if (r.status == CheckStatus::pass && r.strategy) {
    x.strategy = strategy_to_string(*r.strategy);
    x.step_s = r.step_time_s;
    x.tokens_per_sec = r.tokens_per_sec_per_device;
    x.peak_gib = r.peak_gib;
  } else {
    x.reason = r.reason;
  }
  for (const auto& f : r.front) {
    x.front.push_back(
        {strategy_to_string(f.strategy), f.step_s, f.tokens_per_sec_per_device, f.peak_bytes / kGiB, f.mfu});
  }
  return x;
}

// `complete`: every point of the share (of the sweep, without a shard) is there; an interrupted
// run says false, so that no reader takes a partial result for a whole one.
// `keep` is written only when it is not the default, so that a sweep without one writes what it
// wrote before `keep` existed.
void write_sweep_json(const std::string& source, const std::string& fingerprint, std::int64_t total,
                      const SweepKeep& keep, const std::vector<PointResult>& points, const std::string& shard,
                      std::ostream& out, bool complete) {
  JsonWriter j(out);
  j.begin_object().field("schema_version", static_cast<std::int64_t>(kSweepSchemaVersion));
  j.field("sweep", source).field("fingerprint", fingerprint).field("points_total", total);
  if (!keep.is_default()) {
    j.key("keep").begin_array();
    for (const auto& name : keep.names()) j.value(name);
    j.end_array();
  }
  if (!shard.empty()) j.field("shard", shard);
  j.field("complete", complete);
  j.key("points").begin_array();
  for (const auto& x : points) write_point_json(j, x, keep);
  j.end_array();
  if (shard.empty() && complete && keep.smallest) {
    j.key("smallest").begin_array();
    for (const auto& s : smallest_counts(points)) {
      j.begin_object().field("model", s.model).field("device", s.device).field("seq", s.seq);
      j.field("global_batch", s.global_batch).field("devices", s.devices).end_object();
    }
    j.end_array();
  }
  j.end_object();
  out << '\n';
}

// A CSV field: quoted, a quote doubled (RFC 4180); names from inputs made printable first.
std::string csv_field(const std::string& text) {
  std::string q = "\"";
  for (char ch : printable(text)) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// One row per point: the best strategy's columns when the sweep keeps it, the size of the front
// when it keeps that (the front itself is in the JSON).
void write_sweep_csv(const SweepKeep& keep, const std::vector<PointResult>& points, std::ostream& out) {
  out << "index,model,device,devices,seq,global_batch,status";
  if (keep.best) out << ",strategy,step_time_s,tokens_per_sec_per_device,peak_memory_gib";
  if (keep.front) out << ",front_size";
  out << '\n';
  auto num = [](const std::optional<double>& v, int d) { return v ? fixed(*v, d) : std::string(); };
  for (const auto& x : points) {
    out << x.index << ',' << csv_field(x.model) << ',' << csv_field(x.device) << ',' << x.devices << ',' << x.seq << ','
        << x.global_batch << ',' << x.status;
    if (keep.best) {
      out << ',' << csv_field(x.strategy) << ',' << num(x.step_s, 6) << ',' << num(x.tokens_per_sec, 3) << ','
          << num(x.peak_gib, 4);
    }
    if (keep.front) out << ',' << x.front.size();
    out << '\n';
  }
}

void write_sweep_table(const SweepKeep& keep, const std::vector<PointResult>& points, std::ostream& out) {
  TextTable t;
  std::vector<std::string> head = {"model", "device", "N", "seq", "gb", ""};
  if (keep.best) head.insert(head.end(), {"step s", "peak GiB"});
  if (keep.front) head.emplace_back("front");
  head.emplace_back(keep.best ? "best strategy or reason" : "reason");
  t.row(head);
  for (const auto& x : points) {
    std::vector<std::string> row = {printable(std::filesystem::path(x.model).filename().string()),
                                    printable(x.device),
                                    std::to_string(x.devices),
                                    std::to_string(x.seq),
                                    std::to_string(x.global_batch),
                                    x.status};
    if (keep.best)
      row.insert(row.end(), {x.step_s ? fixed(*x.step_s, 3) : "-", x.peak_gib ? fixed(*x.peak_gib, 2) : "-"});
    if (keep.front) row.push_back(std::to_string(x.front.size()));
    row.push_back(x.status == "fits" ? (keep.best ? x.strategy : std::string()) : x.reason.substr(0, 80));
    t.row(row);
  }
  t.print(out);
  if (!keep.smallest) return;
  out << "\nsmallest device count with a fitting strategy:\n";
  for (const auto& s : smallest_counts(points)) {
    out << "  " << printable(s.model) << " on " << printable(s.device) << ", seq " << s.seq << ", gb " << s.global_batch
        << ": " << (s.devices ? std::to_string(*s.devices) : std::string("none of the counts")) << '\n';
  }
}

// The points searched, in parallel (each independent of the others and of the thread count), with
// a progress line on stderr at each tenth; Ctrl-C stops starting new ones (InterruptScope).
struct SweepRun {
  std::map<std::size_t, CheckResult> results;
  bool interrupted = false;
};

SweepRun run_points(const Sweep& sw, const std::vector<std::size_t>& todo, bool quiet, std::ostream& err) {
  const InterruptScope interrupt;
  std::vector<std::optional<CheckResult>> results(todo.size());
  SearchWorkspace workspace;
  std::atomic<std::size_t> finished{0};
  std::mutex progress;
  tbb::parallel_for(std::size_t{0}, todo.size(), [&](std::size_t j) {
    if (InterruptScope::requested()) return;
    results[j] = run_check(sw.points[todo[j]].entry, &workspace);
    const std::size_t now = ++finished;
    if (!quiet && (now * 10 / todo.size() != (now - 1) * 10 / todo.size() || now == todo.size())) {
      const std::lock_guard<std::mutex> lock(progress);
      err << "meshfit sweep: " << now << " / " << todo.size() << " points\n";
    }
  });
  SweepRun run;
  for (std::size_t j = 0; j < todo.size(); ++j) {
    if (results[j]) run.results.emplace(todo[j], std::move(*results[j]));
  }
  run.interrupted = run.results.size() < todo.size();
  return run;
}

// Points read back from sweep JSON (shards, or an interrupted run to resume), all of one sweep.
struct ResultFile {
  std::string source, fingerprint;
  std::int64_t total = -1;
  SweepKeep keep;
  std::map<std::int64_t, PointResult> points;
};

void read_result_file(const std::string& path, ResultFile& into, const std::string& first) {
  const Fields top(load_yaml_file(path), path);
  const std::string fp = top.optional_string("fingerprint").value_or("");
  const std::int64_t t = top.required_int("points_total", 0);
  const SweepKeep keep = top.has("keep") ? read_keep(top, "keep") : SweepKeep{};
  if (into.total < 0) {
    into.source = top.optional_string("sweep").value_or("");
    into.fingerprint = fp;
    into.total = t;
    into.keep = keep;
  } else if (fp != into.fingerprint || t != into.total) {
    top.fail("fingerprint", "a shard of another sweep (" + fp + ", " + std::to_string(t) + " points) than " + first +
                                "'s (" + into.fingerprint + ", " + std::to_string(into.total) + ")");
  } else if (keep != into.keep) {
    top.fail("keep", "a shard keeping " + keep.text() + ", but " + first + " keeps " + into.keep.text());
  }
  const YAML::Node list = top.raw("points");
  if (!list.IsSequence()) top.fail("points", "expected a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Fields p(list[i], path, "points[" + std::to_string(i) + "]");
    const PointResult x = read_point_json(p, into.keep);
    if (x.index >= into.total) p.fail("index", "expected below points_total " + std::to_string(into.total));
    if (!into.points.emplace(x.index, x).second) {
      p.fail("index", "point " + std::to_string(x.index) + " is in two shards");
    }
  }
}

// "K/N" with 1 ≤ K ≤ N.
std::pair<std::int64_t, std::int64_t> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const auto k = slash == std::string::npos ? std::nullopt : parse_integer(text.substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : parse_integer(text.substr(slash + 1));
  if (!k || !n || *n < 1 || *k < 1 || *k > *n) {
    throw InputError("command line", "--shard", "expected K/N with 1 <= K <= N (e.g. 2/8), got " + quoted_text(text));
  }
  return {*k, *n};
}

}  // namespace

int command_sweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CommonFlags common;
  std::string file, shard, output, resume, html;
  bool quiet = false;
  po::options_description desc(
      "Usage: meshfit sweep SWEEP.yaml [--shard K/N] [--format table|json|csv] [-o FILE]\n\n"
      "Searches every point of the sweep's axes (models x devices x device counts x seq x global batch)\n"
      "and reports the fastest fitting strategy per point and the smallest device count that fits.\n"
      "--shard K/N searches every N-th point from the K-th (write JSON; join the shards with meshfit\n"
      "merge). Exit 0 when every point was searched, 2 on bad input, 130 when interrupted (the output\n"
      "then says complete: false; --resume it).\nOptions");
  desc.add_options()("sweep", po::value(&file), "the sweep file")("shard", po::value(&shard), "K/N: one share")(
      "resume", po::value(&resume),
      "an earlier JSON output of this sweep (interrupted, or a shard): its points are kept, not searched again")(
      "output,o", po::value(&output), "write to FILE (atomically) instead of stdout")(
      "html", po::value(&html),
      "also write a self-contained HTML page: best step time against device count per seq and batch")(
      "quiet,q", po::bool_switch(&quiet), "no progress lines on stderr");
  add_common_options(desc, common);
  po::positional_options_description pos;
  pos.add("sweep", 1);
  const auto parsed = parse_or_help("sweep", args, desc, common, out, &pos);
  if (!parsed) return 0;
  const OutputFormat format = parse_format(common.format, {"table", "json", "csv"});
  if (file.empty()) throw UsageError("meshfit sweep: a sweep file is required\nTry 'meshfit sweep --help'.");
  std::int64_t k = 1, n = 1;
  if (!shard.empty()) {
    std::tie(k, n) = parse_shard(shard);
    if (format != OutputFormat::json) {
      throw InputError("command line", "--shard", "a shard is written as JSON (--format json), for meshfit merge");
    }
  }
  if (!resume.empty() && format != OutputFormat::json) {
    throw InputError("command line", "--resume", "a resumed sweep is written as JSON (--format json)");
  }
  const Sweep sw = read_sweep(file);
  if (!html.empty() && !sw.keep.best) {
    throw InputError(file, "keep", "the --html page charts each point's best strategy: keep best as well");
  }
  const auto total = static_cast<std::int64_t>(sw.points.size());
  ResultFile done;
  if (!resume.empty()) {
    read_result_file(resume, done, resume);
    if (done.fingerprint != sw.fingerprint() || done.total != total) {
      throw InputError(resume, "fingerprint", "the result of another sweep than " + file);
    }
    if (done.keep != sw.keep) {
      throw InputError(resume, "keep", "keeps " + done.keep.text() + ", but " + file + " keeps " + sw.keep.text());
    }
  }
  std::vector<std::size_t> mine, todo;  // this share's points, and those not yet in `done`
  for (std::size_t i = 0; i < sw.points.size(); ++i) {
    if (static_cast<std::int64_t>(i) % n != k - 1) continue;
    mine.push_back(i);
    if (!done.points.count(static_cast<std::int64_t>(i))) todo.push_back(i);
  }
  if (!quiet) {
    err << "meshfit sweep: " << todo.size() << " of " << mine.size() << " points to search (" << total
        << " in the sweep)\n";
  }
  const SweepRun ran = run_points(sw, todo, quiet, err);
  std::vector<PointResult> points;
  for (std::size_t i : mine) {
    const auto index = static_cast<std::int64_t>(i);
    if (const auto it = done.points.find(index); it != done.points.end()) {
      points.push_back(it->second);
    } else if (const auto r = ran.results.find(i); r != ran.results.end()) {
      points.push_back(result_of(index, sw.points[i], r->second));
    }
  }
  std::ostringstream text;
  if (format == OutputFormat::json) {
    write_sweep_json(sw.source, sw.fingerprint(), total, sw.keep, points, shard.empty() ? "" : shard, text,
                     points.size() == mine.size());
  } else if (format == OutputFormat::csv) {
    if (ran.interrupted) text << "# INTERRUPTED: the rows below cover only the points searched\n";
    write_sweep_csv(sw.keep, points, text);
  } else {
    if (ran.interrupted) text << "INTERRUPTED: the rows below cover only the points searched\n";
    write_sweep_table(sw.keep, points, text);
  }
  if (output.empty()) {
    out << text.str();
  } else {
    write_file_atomically(output, text.str(), "--output");
  }
  if (!html.empty()) write_file_atomically(html, sweep_html(sw.source, points, points.size() == mine.size()), "--html");
  if (ran.interrupted) return kExitInterrupted;
  return std::any_of(points.begin(), points.end(), [](const PointResult& x) { return x.status == "error"; }) ? 2 : 0;
}

int command_merge(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  CommonFlags common;
  std::vector<std::string> files;
  std::string output;
  po::options_description desc(
      "Usage: meshfit merge SHARD.json... [-o FILE]\n\n"
      "Joins the JSON shards of one sweep (meshfit sweep --shard K/N) into the output a single run\n"
      "writes. Every point must be present exactly once and every shard of the same sweep.\nOptions");
  desc.add_options()("shards", po::value(&files)->composing(), "the shard files")(
      "output,o", po::value(&output), "write to FILE (atomically) instead of stdout");
  add_common_options(desc, common);
  po::positional_options_description pos;
  pos.add("shards", -1);
  const auto parsed = parse_or_help("merge", args, desc, common, out, &pos);
  if (!parsed) return 0;
  if (files.empty()) throw UsageError("meshfit merge: shard files are required\nTry 'meshfit merge --help'.");
  ResultFile whole;
  for (const auto& path : files) read_result_file(path, whole, files.front());
  std::map<std::int64_t, PointResult>& points = whole.points;
  const std::int64_t total = whole.total;
  const std::string& source = whole.source;
  const std::string& fingerprint = whole.fingerprint;
  if (static_cast<std::int64_t>(points.size()) != total) {
    std::string missing;
    for (std::int64_t i = 0; i < total && missing.size() < 60; ++i) {
      if (!points.count(i)) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
    }
    throw InputError("merge: " + std::to_string(total - static_cast<std::int64_t>(points.size())) + " of " +
                     std::to_string(total) + " points are in no shard (" + missing + "...)");
  }
  std::vector<PointResult> all;
  all.reserve(points.size());
  for (auto& [i, x] : points) all.push_back(std::move(x));
  std::ostringstream text;
  write_sweep_json(source, fingerprint, total, whole.keep, all, "", text, true);
  if (output.empty()) {
    out << text.str();
  } else {
    write_file_atomically(output, text.str(), "--output");
  }
  return 0;
}

}  // namespace meshfit
