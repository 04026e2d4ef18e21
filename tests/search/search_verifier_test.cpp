// The verify mode (search/search_verifier.hpp): silent on what the search reports, and it catches
// a recorded figure that a fresh estimate does not reproduce (a stale memo, a wrong bound).
#include <doctest/doctest.h>

#include "engine/device_config.hpp"
#include "engine/model_config.hpp"
#include "engine/run_config.hpp"
#include "search/search_verifier.hpp"
#include "search/strategy_search.hpp"
#include "test_support.hpp"

using namespace meshfit;

TEST_CASE("verify: the searches' reported strategies agree with fresh estimates") {
  for (const auto& [model, devices, seq, gb] :
       std::vector<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>>{
           {"llama-3.1-8b", 16, 4096, 64},
           {"mixtral-8x7b", 32, 4096, 128},
           {"deepseek-v3", 256, 4096, 1024},
           {test::data_path("models/deepseek-v2-lite.json"), 16, 2048, 64}}) {
    const std::string model_name = model;  // (CAPTURE cannot take a structured binding in clang 14)
    CAPTURE(model_name);
    RunFlags f;
    f.seq = seq;
    f.global_batch = gb;
    const Model m = load_model(model);
    const Run run = make_run(f, true);
    const Cluster c = make_cluster("h100-80gb", devices);
    SearchSpace space;
    space.model = &m;
    space.run = &run;
    space.cluster = &c;
    SearchOptions o;
    o.top_k = 20;
    SearchResult r = run_search(space, o);
    REQUIRE((!r.front.empty() || r.closest));
    CHECK(verify_reported(space, r, 0).empty());

    // Mutation check: a figure off by one byte or one nanosecond's worth is found, where it is.
    if (!r.front.empty()) {
      SearchResult bad = r;
      bad.front.back().peak_bytes += 1;
      const auto d = verify_reported(space, bad, 0);
      REQUIRE(d.size() == 1);
      CHECK(d[0].where == "front[" + std::to_string(r.front.size() - 1) + "]");
      CHECK(d[0].what.find("peak ") == 0);
      bad = r;
      bad.top.front().step_s *= 1.000001;
      const auto t = verify_reported(space, bad, 0);
      REQUIRE(t.size() == 1);
      CHECK(t[0].where == "top[0]");
      CHECK(t[0].what.find("step ") != std::string::npos);
    }
  }
}
