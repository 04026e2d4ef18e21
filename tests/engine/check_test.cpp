// `meshfit check`, the CI gate (issue 6; docs/spec/cli.md): the bundled example manifest line
// by line, exit codes, the JSON and JUnit reports, atomic writes, baselines and annotations.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "test_support.hpp"

using meshfit::test::run;
using meshfit::test::xml_elements;

namespace fs = std::filesystem;

namespace {

const std::string kManifest = std::string(MESHFIT_EXAMPLES) + "/ci/manifest.yaml";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A fresh directory for report files.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("meshfit-check-test-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string attribute(const std::string& xml, const std::string& element, const std::string& name) {
  const std::size_t at = xml.find("<" + element + " ");
  if (at == std::string::npos) return "";
  const std::size_t end = xml.find('>', at);
  const std::size_t a = xml.find(" " + name + "=\"", at);
  if (a == std::string::npos || a > end) return "";
  const std::size_t v = a + name.size() + 3;
  return xml.substr(v, xml.find('"', v) - v);
}

}  // namespace

TEST_CASE("the example manifest: one line per entry, the totals, exit 2 for the malformed file") {
  const auto r = run({"check", kManifest});
  CHECK(r.code == 2);  // an entry could not be read outweighs a failing one (cli.md exit codes)
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 9);
  // Free entries name the fastest fitting strategy; pinned ones their own.
  CHECK(lines[0].rfind("PASS   llama-8b-any ", 0) == 0);
  CHECK(has(lines[0], "best dp=8,"));
  CHECK(lines[1].rfind("PASS   llama-8b-pinned ", 0) == 0);
  CHECK(has(lines[1], "pinned dp=8,tp=1,pp=1,zero=3,recompute=selective,mbs=1,m=8"));
  CHECK(lines[2].rfind("PASS   mixtral-pinned ", 0) == 0);
  CHECK(has(lines[2], "16 x h100-80gb"));
  CHECK(lines[3].rfind("PASS   deepseek-v2-lite-any ", 0) == 0);
  // 70.55 B parameters with 2-byte weights and 4-byte gradients (Megatron's fp32 accumulation)
  // unsharded are 70,553,706,496 · 6 B = 394.3 GiB before any optimizer state: it cannot fit.
  CHECK(lines[4].rfind("FAIL   llama-70b-on-8 ", 0) == 0);
  CHECK(has(lines[4], "exceeds the budget 79.65 GiB"));
  CHECK(has(lines[4], "largest term"));
  // The glob expands in sorted order; the malformed file is an error naming file and field.
  CHECK(lines[5].rfind("ERROR  every-model/broken.json ", 0) == 0);
  CHECK(has(lines[5], "models/broken.json: field 'num_attention_heads': expected a positive integer"));
  CHECK(lines[6].rfind("PASS   every-model/deepseek-v2-lite.json ", 0) == 0);
  CHECK(lines[7].rfind("PASS   every-model/llama-3.1-8b.json ", 0) == 0);
  CHECK(lines[8] == "6 passed, 1 failed, 1 error of 8 entries");
}

TEST_CASE("the example manifest: the JSON report (cli.md shape) and JUnit XML") {
  const fs::path dir = scratch("reports");
  const auto r = run({"check", kManifest, "--json", (dir / "r.json").string(), "--junit", (dir / "r.xml").string()});
  CHECK(r.code == 2);
  const YAML::Node j = YAML::LoadFile((dir / "r.json").string());
  CHECK(j["schema_version"].as<int>() == 1);
  REQUIRE(j["entries"].size() == 8);
  for (const auto& e : j["entries"]) {
    for (const char* key : {"name", "model", "status", "reason", "peak_memory_gib", "step_time_s", "strategy"}) {
      CHECK_MESSAGE(e[key].IsDefined(), key);
    }
  }
  CHECK(j["entries"][4]["status"].as<std::string>() == "fail");
  CHECK(j["entries"][4]["peak_memory_gib"].as<double>() > 394.3);
  CHECK(j["entries"][5]["status"].as<std::string>() == "error");
  CHECK(j["entries"][5]["strategy"].IsNull());
  CHECK(j["entries"][1]["strategy"]["zero_stage"].as<int>() == 3);
  CHECK(j["totals"]["pass"].as<int>() == 6);
  CHECK(j["totals"]["fail"].as<int>() == 1);
  CHECK(j["totals"]["error"].as<int>() == 1);

  const std::string xml = slurp(dir / "r.xml");
  const auto elements = xml_elements(xml);
  REQUIRE(!elements.empty());
  CHECK(elements[0] == "testsuites");
  CHECK(elements[1] == "testsuite");
  CHECK(std::count(elements.begin(), elements.end(), "testcase") == 8);
  CHECK(std::count(elements.begin(), elements.end(), "failure") == 1);
  CHECK(std::count(elements.begin(), elements.end(), "error") == 1);
  CHECK(attribute(xml, "testsuite", "tests") == "8");
  CHECK(attribute(xml, "testsuite", "failures") == "1");
  CHECK(attribute(xml, "testsuite", "errors") == "1");
  CHECK(has(xml, "name=\"llama-70b-on-8\""));
  // No temporary file is left beside the reports.
  std::size_t files = 0;
  for (const auto& f : fs::directory_iterator(dir)) files += f.is_regular_file();
  CHECK(files == 2);
}

TEST_CASE("check output is the same with 1 and 2 threads") {
  const auto one = run({"check", kManifest, "--threads", "1", "--format", "json"});
  const auto two = run({"check", kManifest, "--threads", "2", "--format", "json"});
  CHECK(one.out == two.out);
}

TEST_CASE("a report that cannot be written is bad input naming the flag; an old report is replaced whole") {
  const auto r = run({"check", kManifest, "--json", "/nonexistent-dir/r.json"});
  CHECK(r.code == 2);
  CHECK(has(r.err, "--json"));
  const fs::path dir = scratch("replace");
  { std::ofstream(dir / "r.json") << "stale"; }
  run({"check", kManifest, "--json", (dir / "r.json").string()});
  CHECK(slurp(dir / "r.json").rfind("{\"schema_version\":1,", 0) == 0);
}

TEST_CASE("FILES mode: models and globs with shared cluster and run flags") {
  const std::string dir = std::string(MESHFIT_EXAMPLES) + "/ci/models/";
  const auto ok = run({"check", dir + "llama-3.1-8b.json", "--device", "h100-80gb", "--devices", "8", "--seq", "4096",
                       "--global-batch", "64"});
  CHECK(ok.code == 0);
  CHECK(ok.out.rfind("PASS ", 0) == 0);
  // A strategy every file must fit: ZeRO-0 replicas of an 8B model hold 16 B per parameter
  // (2 weights + 4 gradients + 12 Adam/master), 8.03e9 · 16 B = 119.7 GiB > 80 GiB.
  const auto pinned = run({"check", dir + "llama-3.1-8b.json", "--device", "h100-80gb", "--devices", "8", "--seq",
                           "4096", "--global-batch", "64", "--strategy", "dp=8,zero=0,recompute=full,mbs=1"});
  CHECK(pinned.code == 1);
  CHECK(pinned.out.rfind("FAIL ", 0) == 0);
  const auto none = run({"check", dir + "nothing-*.json", "--device", "h100-80gb", "--devices", "8", "--seq", "4096",
                         "--global-batch", "64"});
  CHECK(none.code == 2);
  CHECK(has(none.out, "matches no file"));
  const auto missing = run({"check", dir + "llama-3.1-8b.json", "--device", "h100-80gb", "--seq", "4096"});
  CHECK(missing.code == 2);
  CHECK(has(missing.err, "--devices is required"));
}

TEST_CASE("a bad entry is an error of its own; the others still run") {
  const fs::path dir = scratch("manifest");
  std::ofstream(dir / "m.yaml") << "defaults: {device: h100-80gb, devices: 8, seq: 4096, global_batch: 64}\n"
                                   "entries:\n"
                                   "  - {name: good, model: llama-3.1-8b}\n"
                                   "  - {name: typo, model: llama-3.1-8b, global_bacth: 32}\n"
                                   "  - {name: bad-strategy, model: llama-3.1-8b, strategy: \"tp=3\"}\n"
                                   "  - {name: no-model}\n";
  const auto r = run({"check", (dir / "m.yaml").string()});
  CHECK(r.code == 2);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0].rfind("PASS   good", 0) == 0);
  CHECK(lines[1].rfind("ERROR  typo", 0) == 0);
  CHECK(has(lines[1], "global_bacth"));
  CHECK(lines[2].rfind("ERROR  bad-strategy", 0) == 0);
  CHECK(lines[3].rfind("ERROR  no-model", 0) == 0);
  CHECK(has(lines[3], "entries[3].model"));
  std::ofstream(dir / "empty.yaml") << "entries: []\n";
  CHECK(run({"check", (dir / "empty.yaml").string()}).code == 2);
  // Without a defaults block the same entry error (it was an internal error, exit 3).
  std::ofstream(dir / "no-defaults.yaml") << "entries:\n"
                                             "  - {name: no-model, devices: 8, seq: 4096, global_batch: 64}\n";
  const auto bare = run({"check", (dir / "no-defaults.yaml").string()});
  CHECK(bare.code == 2);
  CHECK(bare.out.rfind("ERROR  no-model", 0) == 0);
  CHECK(has(bare.out, "field 'entries[0].model': missing"));
}

TEST_CASE("--baseline: a pinned peak that grew beyond --max-growth fails and names the term") {
  const fs::path dir = scratch("baseline");
  std::ofstream(dir / "m.yaml") << "entries:\n"
                                   "  - {name: pinned, model: llama-3.1-8b, device: h100-80gb, devices: 8, seq: 4096,\n"
                                   "     global_batch: 64, strategy: \"dp=8,zero=3,recompute=selective,mbs=1\"}\n";
  const std::string m = (dir / "m.yaml").string();
  REQUIRE(run({"check", m, "--json", (dir / "now.json").string()}).code == 0);
  // An older report in which the peak was 10% lower, activations included.
  YAML::Node old = YAML::LoadFile((dir / "now.json").string());
  const double peak = old["entries"][0]["peak_memory_gib"].as<double>();
  const double act = old["entries"][0]["terms"]["activations"].as<double>();
  old["entries"][0]["peak_memory_gib"] = peak / 1.10;
  old["entries"][0]["terms"]["activations"] = act - (peak - peak / 1.10);
  { std::ofstream(dir / "old.json") << YAML::Dump(old); }
  const auto grown = run({"check", m, "--baseline", (dir / "old.json").string()});
  CHECK(grown.code == 1);
  CHECK(has(grown.out, "peak memory grew 10.0%"));
  CHECK(has(grown.out, "most in activations +"));
  CHECK(run({"check", m, "--baseline", (dir / "old.json").string(), "--max-growth", "15%"}).code == 0);
  CHECK(run({"check", m, "--baseline", (dir / "m.yaml").string()}).code == 2);  // not a report
}

TEST_CASE("GITHUB_ACTIONS: failures become workflow annotations pointing at the file") {
  ::setenv("GITHUB_ACTIONS", "true", 1);
  const auto r = run({"check", kManifest});
  ::unsetenv("GITHUB_ACTIONS");
  CHECK(has(r.out, "::error file="));
  CHECK(has(r.out, "models/broken.json,title=meshfit check error%3A every-model/broken.json::"));
  CHECK(has(r.out, "manifest.yaml,line="));
  const auto quiet = run({"check", kManifest});
  CHECK(!has(quiet.out, "::error"));
}
