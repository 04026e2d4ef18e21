#include "engine/check_reports.hpp"

#include "engine/json_writer.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"
#include "engine/utf8_text.hpp"

namespace meshfit {

namespace {

struct Totals {
  std::int64_t pass = 0, fail = 0, error = 0;
};

Totals count(const std::vector<CheckResult>& results) {
  Totals t;
  for (const auto& r : results) {
    (r.status == CheckStatus::pass ? t.pass : r.status == CheckStatus::fail ? t.fail : t.error) += 1;
  }
  return t;
}

std::string upper(CheckStatus s) { return s == CheckStatus::pass ? "PASS" : s == CheckStatus::fail ? "FAIL" : "ERROR"; }

// What an entry found, for the summary line: the strategy's peak and headroom and its step time.
std::string finding(const CheckResult& r) {
  if (!r.strategy || !r.peak_gib) return "";
  std::string s = r.pinned ? "pinned " : "best ";
  s += strategy_to_string(*r.strategy) + ": peak " + fixed(*r.peak_gib, 2) + " GiB";
  std::string notes;
  if (r.peak_likely_lo_gib && r.peak_likely_hi_gib) {
    notes = "likely " + fixed(*r.peak_likely_lo_gib, 1) + "\u2013" + fixed(*r.peak_likely_hi_gib, 1);
  }
  if (r.budget_gib)
    notes += (notes.empty() ? "" : "; ") + std::string("headroom ") + fixed(*r.budget_gib - *r.peak_gib, 2) + " GiB";
  if (!notes.empty()) s += " (" + notes + ")";
  if (r.step_time_s) s += ", " + fixed(*r.step_time_s, 3) + " s/step";
  return s;
}

}  // namespace

void write_check_summary(const std::vector<CheckResult>& results, std::ostream& out) {
  TextTable t(4);  // every column left-aligned; no header row: each line stands alone in a CI log
  for (const auto& r : results) {
    const std::string cluster = r.devices > 0 ? std::to_string(r.devices) + " x " + r.device : r.device;
    std::string what = finding(r);
    if (!r.reason.empty()) what += (what.empty() ? "" : "; ") + r.reason;
    t.row({upper(r.status), r.name, cluster, printable(what)});
  }
  t.print(out);
  const Totals n = count(results);
  out << n.pass << " passed, " << n.fail << " failed, " << n.error << " error" << (n.error == 1 ? "" : "s") << " of "
      << results.size() << " entr" << (results.size() == 1 ? "y" : "ies") << '\n';
}

void write_check_json(const std::vector<CheckResult>& results, std::ostream& out) {
  JsonWriter j(out);
  j.begin_object().field("schema_version", std::int64_t{1}).key("entries").begin_array();
  for (const auto& r : results) {
    j.begin_object().field("name", r.name).field("model", r.model).field("status", to_string(r.status));
    j.field("reason", r.reason).field("pinned", r.pinned);
    j.field("device", r.device).field("devices", r.devices);
    j.field("peak_memory_gib", r.peak_gib);
    j.field("peak_memory_likely_p10_gib", r.peak_likely_lo_gib);
    j.field("peak_memory_likely_p90_gib", r.peak_likely_hi_gib);
    j.field("budget_gib", r.budget_gib);
    j.field("step_time_s", r.step_time_s);
    j.field("tokens_per_sec_per_device", r.tokens_per_sec_per_device);
    j.key("strategy");
    if (r.strategy) {
      write_strategy_json(j, *r.strategy);
    } else {
      j.null();
    }
    if (r.peak_gib) {
      j.field("peak_stage", r.peak_stage).key("terms").begin_object();
      for (const auto& [name, gib] : r.terms_gib) j.field(name, gib);
      j.end_object();
    }
    if (!r.pinned && r.status != CheckStatus::error) j.field("valid", r.valid);
    if (r.baseline_peak_gib || r.baseline_step_time_s) {
      j.key("baseline").begin_object();
      j.field("peak_memory_gib", r.baseline_peak_gib);
      j.field("step_time_s", r.baseline_step_time_s);
      j.end_object();
    }
    if (!r.file.empty()) j.field("file", r.file);
    j.end_object();
  }
  const Totals n = count(results);
  j.end_array().key("totals").begin_object().field("pass", n.pass).field("fail", n.fail).field("error", n.error);
  j.end_object().end_object();
  out << '\n';
}

void write_check_junit(const std::vector<CheckResult>& results, std::ostream& out) {
  const Totals n = count(results);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"meshfit check\" tests=\"" << results.size() << "\" failures=\"" << n.fail << "\" errors=\""
      << n.error << "\">\n";
  out << "  <testsuite name=\"meshfit check\" tests=\"" << results.size() << "\" failures=\"" << n.fail
      << "\" errors=\"" << n.error << "\" skipped=\"0\">\n";
  for (const auto& r : results) {
    out << "    <testcase classname=\"meshfit.check\" name=\"" << xml_escape(r.name) << "\"";
    if (!r.file.empty()) out << " file=\"" << xml_escape(r.file) << "\"";
    if (r.line > 0) out << " line=\"" << r.line << "\"";
    const std::string found = finding(r);
    if (r.status == CheckStatus::pass) {
      out << ">\n";
      if (!found.empty()) out << "      <system-out>" << xml_escape(found) << "</system-out>\n";
      out << "    </testcase>\n";
      continue;
    }
    const char* tag = r.status == CheckStatus::fail ? "failure" : "error";
    out << ">\n      <" << tag << " message=\"" << xml_escape(r.reason) << "\" type=\""
        << (r.status == CheckStatus::fail ? "DoesNotFit" : "InvalidInput") << "\">"
        << xml_escape(r.model + (found.empty() ? "" : "\n" + found) + "\n" + r.reason) << "</" << tag << ">\n";
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

void write_github_annotations(const std::vector<CheckResult>& results, std::ostream& out) {
  // Workflow-command data escapes %, CR and LF; properties also escape ':' and ','.
  auto data = [](const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '%')
        o += "%25";
      else if (c == '\r')
        o += "%0D";
      else if (c == '\n')
        o += "%0A";
      else
        o += c;
    }
    return o;
  };
  auto property = [&](const std::string& s) {
    std::string o;
    for (char c : data(s)) {
      if (c == ':')
        o += "%3A";
      else if (c == ',')
        o += "%2C";
      else
        o += c;
    }
    return o;
  };
  for (const auto& r : results) {
    if (r.status == CheckStatus::pass) continue;
    out << "::error ";
    if (!r.file.empty()) out << "file=" << property(r.file) << ",";
    if (r.line > 0) out << "line=" << r.line << ",";
    out << "title=" << property("meshfit check " + std::string(to_string(r.status)) + ": " + r.name)
        << "::" << data(r.reason) << '\n';
  }
}

}  // namespace meshfit
