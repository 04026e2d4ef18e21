// What `meshfit search` writes beside its table (issue 7): the SVG chart (well-formed, one
// numbered point per front strategy with that strategy in its title, the budget line, axes with
// units), the HTML report (inputs, the front, the chart, one memory bar row per stage of the
// fastest strategy), and --export-best.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include "engine/strategy_string.hpp"
#include "test_support.hpp"

using meshfit::test::run;
using meshfit::test::xml_elements;

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// A small space: Llama-3.1-8B on 16 H100s, pinned to pp 2 so that the report has two stages.
const std::vector<std::string> kSearch = {
    "search", "--model",        "llama-3.1-8b", "--device", "h100-80gb", "--devices", "16",  "--seq",
    "4096",   "--global-batch", "64",           "--pp",     "2",         "--format",  "json"};

}  // namespace

TEST_CASE("search --plot: a well-formed SVG with the front's points, the budget and the axes") {
  const fs::path dir = fs::temp_directory_path() / "meshfit-plot-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto args = kSearch;
  args.insert(args.end(), {"--plot", (dir / "front.svg").string(), "--report", (dir / "report.html").string()});
  const auto r = run(args);
  REQUIRE(r.code == 0);
  const std::string svg = slurp(dir / "front.svg");
  const auto elements = xml_elements(svg);
  REQUIRE(!elements.empty());
  CHECK(elements.front() == "svg");
  // The front from the JSON output: its size and its strategies.
  const std::size_t front =
      count_of(r.out.substr(r.out.find("\"front\""), r.out.find("\"top\"") - r.out.find("\"front\"")), "\"strategy\"");
  REQUIRE(front > 0);
  const std::string front_group = svg.substr(svg.find("<g class=\"front\">"));
  CHECK(count_of(front_group, "<circle") == front);
  CHECK(count_of(front_group, "<title>") == front);
  CHECK(svg.find("<title>1: ") != std::string::npos);
  CHECK(svg.find("budget 79.6 GiB") != std::string::npos);  // H100-80GB: 79.6 GiB usable (the device preset)
  CHECK(svg.find("peak memory per device (GiB)") != std::string::npos);
  CHECK(svg.find("step time (s, log scale)") != std::string::npos);
  CHECK(count_of(svg, "r=\"1.6\"") > front);  // the fitting strategies beyond the front, faint

  const std::string html = slurp(dir / "report.html");
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("</html>") != std::string::npos);
  // The chart, and per front strategy its stage bars and its step-time bar.
  CHECK(count_of(html, "<svg") == 1 + 2 * front);
  CHECK(count_of(html, "<tr data-i=\"") == front);              // one front row per strategy
  CHECK(count_of(html, "<section class=\"detail\"") == front);  // and one breakdown
  CHECK(count_of(html, " hidden=\"hidden\"") == front - 1);     // all but the fastest's at first
  // The fastest's breakdown: pp=2, its two stages.
  const std::size_t first = html.find("<section class=\"detail\" data-i=\"1\"");
  REQUIRE(first != std::string::npos);
  const std::string fastest = html.substr(first, html.find("</section>", first) - first);
  CHECK(fastest.find(">stage 0</text>") != std::string::npos);
  CHECK(fastest.find(">stage 1</text>") != std::string::npos);
  CHECK(fastest.find(">stage 2</text>") == std::string::npos);
  // The chart inside the page is the same document, without the XML declaration.
  const std::string embedded = html.substr(html.find("<svg"), html.find("</svg>") + 6 - html.find("<svg"));
  CHECK(!xml_elements("<?xml version=\"1.0\"?>\n" + embedded).empty());
}

TEST_CASE("search --export-best: the fastest strategy in the trainer's format") {
  auto args = kSearch;
  args.insert(args.end(), {"--export-best", "megatron"});
  const auto r = run(args);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("\"export\":{\"format\":\"megatron\",\"text\":\"# Megatron-LM") != std::string::npos);
  CHECK(r.out.find("--tensor-model-parallel-size") != std::string::npos);
  CHECK(r.out.find("--pipeline-model-parallel-size 2") != std::string::npos);

  auto table = kSearch;
  table.resize(table.size() - 2);  // no --format json
  table.insert(table.end(), {"--export-best", "nemo"});
  CHECK(run(table).code == 2);
  // The trainer named is the search's target: pp = 2 cannot be a DeepSpeed JSON, so nothing is
  // left, and the counts name the trainer's rule.
  table.back() = "deepspeed";
  const auto ds = run(table);
  CHECK(ds.code == 1);
  CHECK(ds.out.find("trainer_target") != std::string::npos);
  CHECK(ds.err.find("nothing fits") != std::string::npos);
}

TEST_CASE("search --export-best X keeps only what X can run, so the export never refuses the pick") {
  for (const char* trainer : {"megatron", "torchtitan", "deepspeed"}) {
    const auto r = run({"search", "--model", "llama-3.1-8b", "--device", "h100-80gb", "--devices", "16", "--seq",
                        "4096", "--global-batch", "64", "--export-best", trainer, "--format", "json"});
    CHECK_MESSAGE(r.code == 0, trainer);
    CHECK_MESSAGE(r.out.find("\"export\":{\"format\":\"" + std::string(trainer) + "\"") != std::string::npos, trainer);
    CHECK_MESSAGE(r.out.find("\"trainer_target\":") != std::string::npos, trainer);  // the rest, by rule
  }
  // DeepSeek-V3's 61 layers on an uneven pipeline: Megatron gets the layout itself.
  const auto dsv3 = run({"search", "--model", "deepseek-v3", "--device", "h100-80gb", "--devices", "1024", "--seq",
                         "4096", "--global-batch", "4096", "--pp", "16", "--export-best", "megatron"});
  CHECK(dsv3.code == 0);
  CHECK(dsv3.out.find("--pipeline-model-parallel-layout \"E") != std::string::npos);
  CHECK(dsv3.out.find("mL\"") != std::string::npos);  // the MTP depth and the loss close the last stage
}

TEST_CASE("strategy strings leave neutral values out and read back to the same strategy") {
  // Spaces with dense and MoE layers, every CP algorithm (hybrid's degree included), DualPipeV and
  // interleaving, SP off with tp > 1, and ZeRO shard groups below dp·cp.
  const std::vector<std::vector<std::string>> searches = {
      {"--model", "llama-3.1-8b", "--device", "h100-80gb", "--devices", "8", "--seq", "4096", "--global-batch", "64",
       "--top", "40"},
      {"--model", "mixtral-8x7b", "--device", "h100-80gb", "--devices", "64", "--seq", "8192", "--global-batch", "256",
       "--schedule", "1f1b,interleaved_1f1b,dualpipev", "--cp-algo", "ring,ulysses,hybrid", "--policies",
       "sp_with_tp=off,tp_in_node=off", "--top", "60"},
  };
  int rows = 0;
  for (const auto& space : searches) {
    std::vector<std::string> args = {"search"};
    args.insert(args.end(), space.begin(), space.end());
    args.insert(args.end(), {"--format", "json"});
    const auto r = run(args);
    REQUIRE(r.code == 0);
    const YAML::Node doc = YAML::Load(r.out);
    for (const char* set : {"front", "top"}) {
      for (const auto& row : doc[set]) {
        const std::string text = row["strategy_string"].as<std::string>();
        // Neutral values are not written.
        for (const char* neutral : {"ep=1,", "etp=1,", "vpp=1,", "zero=0", "sp=false", "recompute=none", "cp=1,"}) {
          CHECK_MESSAGE(text.find(neutral) == std::string::npos, text);
        }
        std::vector<std::string> est = {"estimate"};
        est.insert(est.end(), space.begin(), space.begin() + 10);  // model, device, devices, seq, global batch
        est.insert(est.end(), {"--strategy", text, "--format", "json"});
        const auto e = run(est);
        const std::string why = text + ": " + e.err;
        REQUIRE_MESSAGE(e.code <= 1, why);
        CHECK_MESSAGE(YAML::Dump(YAML::Load(e.out)["strategy"]) == YAML::Dump(row["strategy"]), text);
        ++rows;
      }
    }
  }
  CHECK(rows > 100);
}

TEST_CASE("search --train-tokens and --gpu-hour-price: days, GPU-hours and cost per row") {
  const auto r = run({"search", "--model", "llama-3.1-8b", "--device", "h100-80gb", "--devices", "16", "--seq", "4096",
                      "--global-batch", "64", "--train-tokens", "300B", "--gpu-hour-price", "2", "--format", "json"});
  REQUIRE(r.code == 0);
  const YAML::Node doc = YAML::Load(r.out);
  int rows = 0;
  for (const auto& row : doc["front"]) {
    // 300B = 3·10^11 tokens over 16 devices at the row's tokens/s per device.
    const double seconds = 3e11 / (row["tokens_per_sec_per_device"].as<double>() * 16);
    CHECK(row["train_days"].as<double>() == doctest::Approx(seconds / 86400).epsilon(1e-12));
    CHECK(row["gpu_hours"].as<double>() == doctest::Approx(16 * seconds / 3600).epsilon(1e-12));
    CHECK(row["cost"].as<double>() == doctest::Approx(2 * 16 * seconds / 3600).epsilon(1e-12));
    ++rows;
  }
  CHECK(rows > 0);
  CHECK(run({"search", "--model", "llama-3.1-8b", "--device", "h100-80gb", "--devices", "16", "--seq", "4096",
             "--global-batch", "64", "--train-tokens", "15Q"})
            .code == 2);
  CHECK(run({"search", "--model", "llama-3.1-8b", "--device", "h100-80gb", "--devices", "16", "--seq", "4096",
             "--global-batch", "64", "--gpu-hour-price", "2"})
            .code == 2);
}
