// `meshfit sweep SWEEP.yaml` and `meshfit merge SHARD.json...` (issue 24, first part: one
// process, and shards for batch schedulers): every point of a sweep's axes searched (points in
// parallel, each one's search as `meshfit check` runs it), the fastest fitting strategy per point
// and, per model, device, sequence and batch, the smallest device count with one. `--shard K/N`
// searches every N-th point from the K-th; `merge` joins the shards' JSON into the same output a
// single run writes, byte for byte. Under mpirun the points are spread over the ranks
// (sweep_mpi.hpp), and rank 0 writes that same output.
#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <sstream>

#include "engine/atomic_file.hpp"
#include "engine/check_runner.hpp"
#include "engine/cli.hpp"
#include "engine/cli_options.hpp"
#include "engine/commands.hpp"
#include "engine/input_error.hpp"
#include "engine/interrupt.hpp"
#include "engine/json_writer.hpp"
#include "engine/memory_terms.hpp"
#include "engine/strategy_string.hpp"
#include "engine/sweep_assign.hpp"
#include "engine/sweep_file.hpp"
#include "engine/sweep_mpi.hpp"
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

// A progress line on stderr at each tenth of the points, with how many each rank searched when
// there are ranks: "300 / 1000 points (rank 0: 80, 1: 75, 2: 72, 3: 73)"; beyond 16 ranks the
// fewest and the most.
bool progress_due(std::size_t now, std::size_t total) {
  return now * 10 / total != (now - 1) * 10 / total || now == total;
}

// The points searched in one process, in parallel (each independent of the others and of the
// thread count), with progress lines; Ctrl-C stops starting new ones (InterruptScope).
struct SweepRun {
  std::map<std::size_t, PointResult> results;
  bool interrupted = false;
};

SweepRun run_points(const Sweep& sw, const std::vector<std::size_t>& todo, bool quiet, std::ostream& err) {
  const InterruptScope interrupt;
  std::vector<std::optional<PointResult>> results(todo.size());
  SearchWorkspace workspace;
  std::atomic<std::size_t> finished{0};
  std::mutex progress;
  tbb::parallel_for(std::size_t{0}, todo.size(), [&](std::size_t j) {
    if (InterruptScope::requested()) return;
    const std::size_t i = todo[j];
    results[j] = result_of(static_cast<std::int64_t>(i), sw.points[i], run_check(sw.points[i].entry, &workspace));
    const std::size_t now = ++finished;
    if (!quiet && progress_due(now, todo.size())) {
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

// The same points spread over the ranks of an MPI job (sweep_mpi.hpp): every rank searches, rank 0
// hands out the points biggest first and gets each back as its JSON, read as --resume reads a
// point, so that what it writes is what one process writes. Only rank 0 returns results.
// `write_interrupted` writes what came back when a rank is interrupted or fails (rank 0 then ends
// the job, exit 130).
SweepRun run_ranked(SweepRanks& ranks, const Sweep& sw, const std::vector<std::size_t>& todo, std::size_t threads,
                    bool quiet, std::ostream& err,
                    const std::function<void(const std::map<std::size_t, PointResult>&)>& write_interrupted) {
  SearchWorkspace workspace;
  SweepRanks::Job job;
  job.threads = threads;
  job.search = [&](std::size_t i) {
    std::ostringstream json;
    JsonWriter j(json);
    write_point_json(
        j, result_of(static_cast<std::int64_t>(i), sw.points[i], run_check(sw.points[i].entry, &workspace)), sw.keep);
    return json.str();
  };
  SweepRun run;
  if (ranks.rank() == 0) {
    job.order = biggest_first(todo, sweep_costs(sw, todo));
    job.receive = [&](std::size_t i, const std::string& json) {
      const std::string source = "the result of point " + std::to_string(i);
      run.results.emplace(i, read_point_json(Fields(parse_yaml_text(json, source), source), sw.keep));
    };
    job.progress = [&](std::size_t now, const std::vector<std::size_t>& per_rank) {
      if (quiet || !progress_due(now, todo.size())) return;
      err << "meshfit sweep: " << now << " / " << todo.size() << " points (";
      if (per_rank.size() <= 16) {
        err << "rank";
        for (std::size_t r = 0; r < per_rank.size(); ++r) err << (r ? ", " : " ") << r << ": " << per_rank[r];
      } else {  // a line per tenth stays a line
        const auto [lo, hi] = std::minmax_element(per_rank.begin(), per_rank.end());
        err << per_rank.size() << " ranks: " << *lo << " to " << *hi << " each";
      }
      err << ")\n";
    };
    job.write_interrupted = [&] {
      err << "meshfit sweep: interrupted: writing the " << run.results.size() << " of " << todo.size()
          << " points back so far, marked incomplete; ending every rank\n";
      write_interrupted(run.results);
    };
  }
  ranks.run(job);
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
  std::int64_t threads = 0;
  po::options_description desc(
      "Usage: meshfit sweep SWEEP.yaml [--shard K/N] [--format table|json|csv] [-o FILE]\n\n"
      "Searches every point of the sweep's axes (models x devices x device counts x seq x global batch)\n"
      "and reports the fastest fitting strategy per point and the smallest device count that fits\n"
      "(what the file's keep lists: best, smallest, and each point's Pareto front).\n"
      "--shard K/N searches every N-th point from the K-th (write JSON; join the shards with meshfit\n"
      "merge). Exit 0 when every point was searched, 2 on bad input, 130 when interrupted (the output\n"
      "then says complete: false; --resume it).\n\n"
      "Under mpirun (mpirun -np N meshfit sweep SWEEP.yaml) the points are spread over the ranks,\n"
      "biggest first, each rank searching as many at once as it has threads; rank 0 writes the output,\n"
      "the same bytes as one process. Ctrl-C or a failed rank: rank 0 writes what came back, marked\n"
      "complete: false, and every rank ends (mpirun exits non-zero). Write with -o FILE there: stdout\n"
      "passes through mpirun, which can cut an interrupted run's short. " +
      std::string(sweep_mpi_built() ? "This build has MPI."
                                    : "This build has no MPI: it refuses to run under mpirun.") +
      "\nOptions");
  desc.add_options()("sweep", po::value(&file), "the sweep file")("shard", po::value(&shard), "K/N: one share")(
      "resume", po::value(&resume),
      "an earlier JSON output of this sweep (interrupted, or a shard): its points are kept, not searched again")(
      "output,o", po::value(&output), "write to FILE (atomically) instead of stdout")(
      "html", po::value(&html),
      "also write a self-contained HTML page: best step time against device count per seq and batch")(
      "threads", po::value(&threads)->default_value(0),
      "search threads (default 0: all cores; under mpirun, per rank: the cores mpirun binds it to)")(
      "quiet,q", po::bool_switch(&quiet), "no progress lines on stderr");
  add_common_options(desc, common);
  po::positional_options_description pos;
  pos.add("sweep", 1);
  const auto parsed = parse_or_help("sweep", args, desc, common, out, &pos);
  if (!parsed) return 0;
  // Every rank of an MPI job checks the flags and reads the inputs (rank 0 alone --resume's file),
  // and they agree on them before any search: a mistake anywhere ends every rank with exit 2, its
  // message printed once.
  SweepRanks ranks;
  OutputFormat format = OutputFormat::table;
  std::int64_t k = 1, n = 1;
  Sweep sw;
  ResultFile done;
  std::exception_ptr problem;
  try {
    check_flag_range("--threads", static_cast<double>(threads), 0, kMaxThreads);
    format = parse_format(common.format, {"table", "json", "csv"});
    if (file.empty()) throw UsageError("meshfit sweep: a sweep file is required\nTry 'meshfit sweep --help'.");
    if (!shard.empty()) {
      std::tie(k, n) = parse_shard(shard);
      if (format != OutputFormat::json) {
        throw InputError("command line", "--shard", "a shard is written as JSON (--format json), for meshfit merge");
      }
    }
    if (!resume.empty() && format != OutputFormat::json) {
      throw InputError("command line", "--resume", "a resumed sweep is written as JSON (--format json)");
    }
    sw = read_sweep(file);
    if (!html.empty() && !sw.keep.best) {
      throw InputError(file, "keep", "the --html page charts each point's best strategy: keep best as well");
    }
    if (!resume.empty() && ranks.rank() == 0) {
      read_result_file(resume, done, resume);
      if (done.fingerprint != sw.fingerprint() || done.total != static_cast<std::int64_t>(sw.points.size())) {
        throw InputError(resume, "fingerprint", "the result of another sweep than " + file);
      }
      if (done.keep != sw.keep) {
        throw InputError(resume, "keep", "keeps " + done.keep.text() + ", but " + file + " keeps " + sw.keep.text());
      }
    }
  } catch (const std::exception&) {
    problem = std::current_exception();
  }
  const auto agreed =
      ranks.agree(problem != nullptr, sw.fingerprint() + " " + std::to_string(sw.points.size()) + " " + sw.keep.text());
  if (!ranks.active() && problem) std::rethrow_exception(problem);
  if (!agreed.all_ok) {
    // Each problem is printed once (rank 0's by rank 0 alone), before any rank exits; a rank with
    // nothing to say exits 0, so that mpirun waits for the ones that do (and exits 2 with them).
    int code = 0;
    if (problem && agreed.report_own) {
      if (ranks.rank() != 0) {
        try {
          std::rethrow_exception(problem);
        } catch (const std::exception& e) {
          problem = std::make_exception_ptr(InputError("rank " + std::to_string(ranks.rank()) + ": " + e.what()));
        }
      }
      code = report_error("sweep", problem, err);
    } else if (agreed.differs) {
      code = report_error(
          "sweep",
          std::make_exception_ptr(InputError(file + ": rank " + std::to_string(ranks.rank()) +
                                             " reads other points (or another keep) than rank 0: every rank must read "
                                             "the same sweep and models (run from a shared directory)")),
          err);
    } else if (ranks.rank() == 0 && !problem) {
      err << "meshfit sweep: error: rank " << agreed.first_failed << " cannot run this sweep (its message above)\n";
      code = kExitBadInput;
    }
    err.flush();
    ranks.barrier();
    return code;
  }

  const auto total = static_cast<std::int64_t>(sw.points.size());
  std::vector<std::size_t> mine, todo;  // this share's points, and those not yet in `done`
  for (std::size_t i = 0; i < sw.points.size(); ++i) {
    if (static_cast<std::int64_t>(i) % n != k - 1) continue;
    mine.push_back(i);
    if (!done.points.count(static_cast<std::int64_t>(i))) todo.push_back(i);
  }
  if (!quiet && ranks.rank() == 0) {
    err << "meshfit sweep: " << todo.size() << " of " << mine.size() << " points to search (" << total
        << " in the sweep)";
    if (ranks.active()) err << " on " << ranks.size() << (ranks.size() == 1 ? " rank" : " ranks");
    err << '\n';
  }
  // The outputs, from the points of this share searched now or kept from --resume.
  auto write_outputs = [&](const std::map<std::size_t, PointResult>& ran, bool interrupted) {
    std::vector<PointResult> points;
    for (std::size_t i : mine) {
      if (const auto it = done.points.find(static_cast<std::int64_t>(i)); it != done.points.end()) {
        points.push_back(it->second);
      } else if (const auto r = ran.find(i); r != ran.end()) {
        points.push_back(r->second);
      }
    }
    std::ostringstream text;
    if (format == OutputFormat::json) {
      write_sweep_json(sw.source, sw.fingerprint(), total, sw.keep, points, shard.empty() ? "" : shard, text,
                       points.size() == mine.size());
    } else if (format == OutputFormat::csv) {
      if (interrupted) text << "# INTERRUPTED: the rows below cover only the points searched\n";
      write_sweep_csv(sw.keep, points, text);
    } else {
      if (interrupted) text << "INTERRUPTED: the rows below cover only the points searched\n";
      write_sweep_table(sw.keep, points, text);
    }
    if (output.empty()) {
      out << text.str();
      out.flush();
    } else {
      write_file_atomically(output, text.str(), "--output");
    }
    if (!html.empty()) {
      write_file_atomically(html, sweep_html(sw.source, points, points.size() == mine.size()), "--html");
    }
    return points;
  };

  std::optional<tbb::global_control> limit;
  if (threads > 0 && !ranks.active()) {
    limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
  }
  const SweepRun ran = ranks.active() ? run_ranked(ranks, sw, todo, static_cast<std::size_t>(threads), quiet, err,
                                                   [&](const auto& got) { write_outputs(got, true); })
                                      : run_points(sw, todo, quiet, err);
  if (ranks.rank() != 0) return 0;  // rank 0 writes the outputs
  const std::vector<PointResult> points = write_outputs(ran.results, ran.interrupted);
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
