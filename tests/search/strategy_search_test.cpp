// The search's output: the front's definition, pruning that changes nothing, thread-count
// independence, and the CLI's shape and exit codes.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <random>
#include <type_traits>

#include <tbb/global_control.h>

#include "estimator_fixture.hpp"
#include "search/strategy_key.hpp"
#include "search/strategy_search.hpp"
#include "test_support.hpp"

using namespace meshfit;

namespace {

ScoredStrategy point(std::int64_t mem, std::int64_t time, std::int64_t tp) {
  ScoredStrategy x;
  x.mem = mem;
  x.time_ns = time;
  x.strategy.tp = tp;
  return x;
}

struct Inputs {
  Model model;
  Run run;
  Cluster cluster;
};

Inputs inputs(const std::string& model, std::int64_t devices, std::int64_t seq, std::int64_t gb,
              const std::string& device) {
  RunFlags f;
  f.seq = seq;
  f.global_batch = gb;
  return {load_model(model), make_run(f, true), make_cluster(device, devices)};
}

SearchResult search(const Inputs& in, bool prune, bool policies_on = true) {
  SearchSpace space;
  if (!policies_on) space.policies.on.fill(false);
  space.model = &in.model;
  space.run = &in.run;
  space.cluster = &in.cluster;
  space.weighted_tails = prune;
  space.prune_subtrees = prune;
  SearchOptions o;
  o.passes = prune ? PruningPasses::all() : PruningPasses::none();
  return run_search(space, o);
}

bool same(const std::vector<ScoredStrategy>& a, const std::vector<ScoredStrategy>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].mem != b[i].mem || a[i].time_ns != b[i].time_ns || key_less(a[i].strategy, b[i].strategy) ||
        key_less(b[i].strategy, a[i].strategy)) {
      return false;
    }
  }
  return true;
}

// The pruned search's output is the plain one's: counts, histogram, front, top-k and, when nothing
// fits, the closest strategy. True when the closest is reported.
bool agree(const SearchResult& pruned, const SearchResult& plain) {
  CHECK(pruned.enumerated == plain.enumerated);
  CHECK(pruned.valid == plain.valid);
  CHECK(pruned.fitting == plain.fitting);
  CHECK(pruned.histogram == plain.histogram);
  CHECK(same(pruned.front, plain.front));
  CHECK(same(pruned.top, plain.top));
  REQUIRE(pruned.closest.has_value() == plain.closest.has_value());
  if (!pruned.closest) return false;
  CHECK(pruned.closest->mem == plain.closest->mem);
  CHECK_FALSE(key_less(pruned.closest->strategy, plain.closest->strategy));
  CHECK_FALSE(key_less(plain.closest->strategy, pruned.closest->strategy));
  return true;
}

}  // namespace

TEST_CASE("the Pareto front: non-dominated points, exact ties kept, fastest first (§6.3)") {
  // (mem, time): (10, 50) and (20, 30) and (30, 10) are the front; (20, 40) and (40, 10) are
  // dominated; (20, 30) appears twice with different keys and both stay.
  const auto front = pareto_front(
      {point(20, 40, 1), point(10, 50, 2), point(30, 10, 3), point(20, 30, 4), point(40, 10, 5), point(20, 30, 6)});
  REQUIRE(front.size() == 4);
  CHECK(front[0].mem == 30);
  CHECK(front[1].strategy.tp == 4);
  CHECK(front[2].strategy.tp == 6);
  CHECK(front[3].mem == 10);
  // dedupe_ties: one of the two (20, 30) points, the first by key (tp 4).
  const auto deduped = pareto_front(
      {point(20, 40, 1), point(10, 50, 2), point(30, 10, 3), point(20, 30, 4), point(40, 10, 5), point(20, 30, 6)},
      true);
  REQUIRE(deduped.size() == 3);
  CHECK(deduped[1].strategy.tp == 4);
}

TEST_CASE(
    "pruning on the micro-batch size and on ZeRO settings whose states overflow changes nothing (many small spaces)") {
  // The last two fit nothing: the closest strategy must survive the pruning too.
  const Inputs cases[] = {
      inputs("llama-3.1-8b", 8, 8192, 64, "h100-80gb"),  inputs("llama-3.1-8b", 16, 4096, 32, "a100-40gb"),
      inputs("mixtral-8x7b", 16, 4096, 64, "h100-80gb"), inputs("llama-3.1-70b", 32, 8192, 64, "h100-80gb"),
      inputs("qwen3-30b-a3b", 8, 4096, 32, "a100-80gb"), inputs("mixtral-8x7b", 4, 4096, 16, "a100-40gb"),
      inputs("llama-3.1-70b", 8, 8192, 16, "a100-40gb")};
  bool saw_empty = false;
  for (const auto& in : cases) {
    CAPTURE(in.model.name);
    CAPTURE(in.cluster.devices);
    const SearchResult pruned = search(in, true), plain = search(in, false);
    if (agree(pruned, plain)) saw_empty = true;
    CHECK(pruned.estimated < plain.estimated);
  }
  CHECK(saw_empty);
}

TEST_CASE("pruning changes nothing where the peak may fall as b rises (the seed's gradient-clipping case)") {
  // §9.9's seed special case, under --rules sapp-nd or grad_clip_model: seed, lets a fully
  // recomputed layer's contribution drop as b rises (memory_evaluator.hpp), so the micro-batch runs
  // of full recompute are not bisected there. Before: the first case counted 2 strategies too many
  // as fitting, the second stopped on "a micro-batch run whose peak falls as b rises".
  Inputs seed_rules = inputs("qwen3-30b-a3b", 8, 8192, 8, "h100-80gb");
  RunFlags f;
  f.seq = 8192;
  f.global_batch = 8;
  f.rules = "sapp-nd";
  seed_rules.run = make_run(f, true);
  Inputs seed_clip = inputs("mixtral-8x7b", 16, 4096, 64, "h100-80gb");
  seed_clip.run.options.grad_clip_seed = true;
  for (const Inputs* in : {&seed_rules, &seed_clip}) {
    CAPTURE(in->model.name);
    const SearchResult pruned = search(*in, true), plain = search(*in, false);
    agree(pruned, plain);
    CHECK(pruned.fitting > 0);
  }
}

TEST_CASE("pruned and plain searches agree on small spaces drawn at random (rules, clipping, devices)") {
  // A fixed draw (seeded), so that the cases are the same every run: the kind of sweep that found
  // the seed's clipping case above, kept as a guard for pruning rules yet to come.
  std::mt19937 draw(20261130);
  auto pick = [&](auto... values) {
    const std::array<std::common_type_t<decltype(values)...>, sizeof...(values)> all{values...};
    return all[std::uniform_int_distribution<std::size_t>(0, all.size() - 1)(draw)];
  };
  for (int i = 0; i < 24; ++i) {
    const std::string model =
        pick(std::string("llama-3.1-8b"), std::string("qwen3-30b-a3b"), std::string("mixtral-8x7b"));
    const std::int64_t devices = pick(4, 8, 16);
    const std::int64_t seq = pick(2048, 4096, 8192);
    const std::int64_t gb = pick(8, 16, 32, 64);
    const std::string device = pick(std::string("h100-80gb"), std::string("a100-40gb"));
    RunFlags f;
    f.seq = seq;
    f.global_batch = gb;
    f.rules = pick(std::string("default"), std::string("sapp-nd"));
    Inputs in{load_model(model), make_run(f, true), make_cluster(device, devices)};
    in.run.options.grad_clip_seed = pick(false, true);
    CAPTURE(model);
    CAPTURE(devices);
    CAPTURE(seq);
    CAPTURE(gb);
    CAPTURE(device);
    CAPTURE(f.rules);
    CAPTURE(in.run.options.grad_clip_seed);
    agree(search(in, true), search(in, false));
  }
}

TEST_CASE("reusing estimator sides across strategies changes no output (dense, MoE, CP, interleaved)") {
  // Every cache the search keeps per thread (activation and compute sides across ZeRO settings,
  // the (z, G) side across modes and sizes, layer kinds across layouts) against fresh estimates.
  const Inputs cases[] = {
      inputs("mixtral-8x7b", 16, 4096, 64, "h100-80gb"), inputs("qwen3-30b-a3b", 8, 4096, 32, "a100-80gb"),
      inputs("llama-3.1-8b", 16, 8192, 32, "h100-80gb"), inputs("deepseek-v3", 64, 4096, 256, "h100-80gb")};
  for (std::size_t i = 0; i < std::size(cases) + 1; ++i) {
    // The last pass: Mixtral again with DualPipeV listed (its EP and PP traffic is priced apart).
    const Inputs& in = cases[i < std::size(cases) ? i : 0];
    CAPTURE(in.model.name);
    CAPTURE(i);
    SearchSpace space;
    space.model = &in.model;
    space.run = &in.run;
    space.cluster = &in.cluster;
    if (i == std::size(cases))
      space.pins.schedule = {Schedule::one_f_one_b, Schedule::interleaved_1f1b, Schedule::dualpipev};
    SearchOptions kept, fresh;
    kept.top_k = fresh.top_k = 20;
    fresh.reuse = false;
    const SearchResult a = run_search(space, kept), b = run_search(space, fresh);
    CHECK(a.fitting == b.fitting);
    CHECK(same(a.front, b.front));
    CHECK(same(a.top, b.top));
    REQUIRE(a.closest.has_value() == b.closest.has_value());
    if (a.closest) CHECK(a.closest->mem == b.closest->mem);
    for (std::size_t j = 0; j < std::min(a.top.size(), b.top.size()); ++j) {
      CHECK(a.top[j].peak_bytes == b.top[j].peak_bytes);
      CHECK(a.top[j].step_s == b.top[j].step_s);
    }
  }
}

TEST_CASE("best-only search (meshfit check) finds the same fastest strategy, estimating fewer") {
  const Inputs cases[] = {
      inputs("llama-3.1-8b", 8, 8192, 64, "h100-80gb"), inputs("mixtral-8x7b", 16, 4096, 64, "h100-80gb"),
      inputs("qwen3-30b-a3b", 8, 4096, 32, "a100-80gb"), inputs("llama-3.1-70b", 32, 8192, 64, "h100-80gb"),
      inputs("llama-3.1-70b", 8, 8192, 16, "a100-40gb")};
  for (const auto& in : cases) {
    CAPTURE(in.model.name);
    CAPTURE(in.cluster.devices);
    for (std::size_t k : {std::size_t{1}, std::size_t{3}}) {
      CAPTURE(k);
      SearchSpace space;
      space.model = &in.model;
      space.run = &in.run;
      space.cluster = &in.cluster;
      SearchOptions full, best;
      full.top_k = best.top_k = k;
      best.best_only = true;
      const SearchResult a = run_search(space, full), b = run_search(space, best);
      CHECK(same(a.top, b.top));
      CHECK(b.front.empty());
      CHECK(a.valid == b.valid);
      CHECK(a.histogram == b.histogram);
      REQUIRE(a.closest.has_value() == b.closest.has_value());
      if (a.closest) {
        CHECK(a.closest->mem == b.closest->mem);
      } else {
        CHECK(b.estimated < a.estimated);
      }
    }
  }
}

TEST_CASE("rules decided above the leaves give the same counts and histogram with every policy off") {
  // With the policies off, hard rules deep in the table (H16, H19, H22, H23) decide more
  // candidates, and the walk reaches levels it does not reach under the defaults.
  for (const auto& in :
       {inputs("mixtral-8x7b", 16, 4096, 32, "h100-80gb"), inputs("llama-3.1-8b", 8, 2048, 16, "h100-80gb")}) {
    CAPTURE(in.model.name);
    const SearchResult pruned = search(in, true, false), plain = search(in, false, false);
    CHECK(pruned.enumerated == plain.enumerated);
    CHECK(pruned.valid == plain.valid);
    CHECK(pruned.histogram == plain.histogram);
    CHECK(same(pruned.front, plain.front));
  }
}

TEST_CASE("the same output with 1 and 2 threads") {
  const Inputs in = inputs("mixtral-8x7b", 32, 4096, 128, "h100-80gb");
  SearchResult one, two;
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 1);
    one = search(in, true);
  }
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 2);
    two = search(in, true);
  }
  CHECK(same(one.front, two.front));
  CHECK(same(one.top, two.top));
  CHECK(one.histogram == two.histogram);
  CHECK(one.fitting == two.fitting);
}

TEST_CASE("search CLI: JSON shape, byte-identical output, exit 1 when nothing fits") {
  const std::vector<std::string> args = {"search",    "--model",  "llama-3.1-8b", "--device", "h100-80gb",
                                         "--devices", "8",        "--seq",        "8192",     "--global-batch",
                                         "64",        "--format", "json"};
  const auto a = meshfit::test::run(args);
  CHECK(a.code == 0);
  CHECK(a.out.find("{\"schema_version\":2,\"inputs\":{\"model\":\"llama-3.1-8b\",\"device\":\"h100-80gb\","
                   "\"devices\":8,\"seq\":8192,\"global_batch\":64,") == 0);
  CHECK(a.out.find("\"budget_gib\":79.6474609375,\"front\":[{\"strategy\":{\"dp\":") != std::string::npos);
  CHECK(a.out.find("\"counts\":{\"enumerated\":") != std::string::npos);
  CHECK(a.out.find("\"strategy_string\":\"dp=") != std::string::npos);
  // Rules by name in the counts, not by the spec's code.
  CHECK(a.out.find("\"rejected_by\":{") != std::string::npos);
  CHECK(a.out.find("\"H12\"") == std::string::npos);
  CHECK(a.out.find("\"chunks_have_layers\":") != std::string::npos);
  // Byte-identical run to run and whatever the thread count: no timings unless asked for.
  CHECK(a.out.find("\"seconds\"") == std::string::npos);
  std::vector<std::string> one_thread = args;
  one_thread.insert(one_thread.end(), {"--threads", "1"});
  CHECK(meshfit::test::run(one_thread).out == a.out);
  std::vector<std::string> timed = args;
  timed.push_back("--timings");
  CHECK(meshfit::test::run(timed).out.find("\"seconds\":") != std::string::npos);
  // Each row is tight exactly when its peak is within --tight-margin (6%) of the budget.
  const YAML::Node doc = YAML::Load(a.out);
  const double budget = doc["budget_gib"].as<double>();
  int rows = 0;
  for (const char* set : {"front", "top"}) {
    for (const auto& row : doc[set]) {
      CHECK(row["tight"].as<bool>() == (row["peak_memory_gib"].as<double>() > budget * 0.94));
      CHECK(row["dominated"].IsDefined() == (std::string(set) == "top"));
      ++rows;
    }
  }
  CHECK(rows > 0);
  const auto none = meshfit::test::run({"search", "--model", "llama-3.1-405b", "--device", "a100-40gb", "--devices",
                                        "8", "--seq", "8192", "--global-batch", "8"});
  CHECK(none.code == 1);
  CHECK(none.err.find("nothing fits") != std::string::npos);
  const auto bad = meshfit::test::run({"search", "--model", "llama-3.1-8b", "--device", "h100-80gb", "--devices", "8",
                                       "--seq", "8192", "--global-batch", "64", "--tp", "3"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--tp: 3 is not a divisor of the 8 devices") != std::string::npos);
}

TEST_CASE("search over a range of device counts names the smallest that fits") {
  const auto r = meshfit::test::run({"search", "--model", "llama-3.1-8b", "--device", "h100-80gb", "--devices", "1..8",
                                     "--seq", "4096", "--global-batch", "32", "--format", "json"});
  CHECK(r.code == 0);
  // 1..8 means the doublings 1, 2, 4, 8.
  const auto at = [&](const std::string& s) { return r.out.find(s); };
  CHECK(at("{\"devices\":1,") < at("{\"devices\":2,"));
  CHECK(at("{\"devices\":2,") < at("{\"devices\":4,"));
  CHECK(at("{\"devices\":4,") < at("{\"devices\":8,"));
  // One H100 cannot hold 8B parameters' 16+ bytes each, so the answer is above 1.
  CHECK(r.out.find("\"smallest_fitting_devices\":1}") == std::string::npos);
  CHECK(r.out.find("\"smallest_fitting_devices\":null") == std::string::npos);
  const auto bad = meshfit::test::run({"search", "--model", "llama-3.1-8b", "--device", "h100-80gb", "--devices",
                                       "8..4", "--seq", "4096", "--global-batch", "32"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--devices") != std::string::npos);
}
