// A naive search beside the real one (issue 19): every candidate the space enumerates without
// pruning, judged by the rule table one rule at a time (first_failure), scored by the plain
// reference models, the front found by comparing every pair, the top-k by sorting. On small spaces
// its output is the real search's: counts, front and top-k, in order.
#include <doctest/doctest.h>

#include <array>

#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/device_config.hpp"
#include "engine/model_config.hpp"
#include "engine/run_config.hpp"
#include "engine/strategy_string.hpp"
#include "estimators/reference_memory.hpp"
#include "estimators/reference_step_time.hpp"
#include "search/strategy_key.hpp"
#include "search/strategy_search.hpp"
#include "test_support.hpp"

using namespace meshfit;

namespace {

struct Naive {
  std::int64_t valid = 0, fitting = 0;
  std::vector<ScoredStrategy> front, top;
};

Naive naive_search(const SearchSpace& space, std::size_t k) {
  SearchSpace plain = space;
  plain.prune_subtrees = false;
  plain.weighted_tails = false;
  const double budget = space.cluster->device.capacity;
  Naive out;
  std::vector<ScoredStrategy> fitting;
  for (const auto& t : plain.triples()) {
    plain.for_each(
        t,
        [&](const Strategy& s, const Position&) {
          if (plain.first_failure(s)) return;
          ++out.valid;
          const MemoryReport mem = reference_memory(*space.model, *space.run, *space.cluster, s);
          // The peak times the run's --fit-margin factor for s's recompute mode (1 without one).
          if (!(mem.peak * space.run->options.fit_factor_for(s.recompute) <= budget)) return;
          // The second budget of offloaded states (memory-model.md §6.4).
          const Device& dev = space.cluster->device;
          if (s.offload != Offload::none && !(mem.host_peak <= dev.host_memory - dev.host_reserved)) return;
          const TimeReport time = reference_step_time(*space.model, *space.run, *space.cluster, s);
          ScoredStrategy x;
          x.strategy = s;
          x.mem = static_cast<std::int64_t>(std::ceil(mem.peak));
          x.time_ns = std::llround(time.step * 1e9);
          fitting.push_back(x);
        },
        [](std::size_t, std::int64_t) {});
  }
  out.fitting = static_cast<std::int64_t>(fitting.size());
  for (const auto& x :
       fitting) {  // on the front: no other strategy at most as large and faster, or smaller and as fast
    const bool beaten = std::any_of(fitting.begin(), fitting.end(), [&](const ScoredStrategy& y) {
      return (y.mem <= x.mem && y.time_ns < x.time_ns) || (y.mem < x.mem && y.time_ns <= x.time_ns);
    });
    if (!beaten) out.front.push_back(x);
  }
  std::sort(out.front.begin(), out.front.end(), score_less);
  std::sort(fitting.begin(), fitting.end(), score_less);
  out.top.assign(fitting.begin(), fitting.begin() + static_cast<std::ptrdiff_t>(std::min(k, fitting.size())));
  return out;
}

void expect_same(const std::vector<ScoredStrategy>& real, const std::vector<ScoredStrategy>& naive, const char* what) {
  CAPTURE(what);
  REQUIRE(real.size() == naive.size());
  for (std::size_t i = 0; i < real.size(); ++i) {
    CAPTURE(i);
    CHECK(strategy_to_string(real[i].strategy) == strategy_to_string(naive[i].strategy));
    CHECK(real[i].mem == naive[i].mem);
    CHECK(real[i].time_ns == naive[i].time_ns);
  }
}

}  // namespace

TEST_CASE("the search's output is the naive search's on small spaces") {
  struct Spec {
    std::string model;
    std::int64_t devices, seq, gb;
    std::string rules;
    bool policies_off;
    std::array<double, 3> fit_factor{1, 1, 1};  // --fit-margin's factors by recompute mode
    bool search_n_rc = false;                   // with policies off: P12 too, n_rc enumerated (issue 23)
    bool offload = false;                       // every offload searched (issue 23)
    double host_memory = 0;                     // the device's host share, when set
    bool tp_overlap = false;                    // tp_comm_overlap searched both ways (issue 23)
    std::string framework = "megatron";
  };
  const std::string d = test::data_path("models/");
  for (const Spec& spec : std::vector<Spec>{
           {"llama-3.1-8b", 8, 4096, 32, "default", false},
           {"llama-3.1-8b", 16, 8192, 64, "default", true},
           {"llama-3.1-70b", 32, 4096, 64, "default", false},
           {"llama-3.1-70b", 32, 4096, 64, "default", false, {1.10, 1.04, 1.25}},
           {"qwen3-30b-a3b", 8, 4096, 32, "default", true, {1.3, 1.0, 1.15}},
           {"mixtral-8x7b", 16, 4096, 64, "default", false},
           {"mixtral-8x7b", 16, 4096, 32, "sapp-nd", false},
           {"qwen3-30b-a3b", 8, 4096, 32, "default", true},
           {d + "deepseek-v2-lite.json", 8, 2048, 32, "default", true},
           {d + "tiny-moe.yaml", 8, 2048, 32, "default", true, {1, 1, 1}, true},
           {d + "gpt2.json", 4, 1024, 16, "default", true, {1, 1, 1}, true},
           {d + "qwen2-7b.json", 8, 4096, 16, "sapp-nd", true},
           {"llama-3.1-70b", 16, 4096, 32, "default", false, {1, 1, 1}, false, true},
           // A host share that holds some offloaded settings, not all.
           {"llama-3.1-70b", 16, 4096, 32, "default", false, {1, 1, 1}, false, true, 90.0 * (1 << 30)},
           // TP overlap both ways: its buffers against its time (Megatron's and
           // torchtitan's), and H25 rejecting it without SP.
           {"llama-3.1-70b", 32, 4096, 64, "default", false, {1, 1, 1}, false, false, 0, true},
           {"mixtral-8x7b", 16, 4096, 32, "default", true, {1, 1, 1}, false, false, 0, true},
           {"llama-3.1-70b", 16, 4096, 32, "default", false, {1, 1, 1}, false, false, 0, true, "torchtitan"}}) {
    CAPTURE(spec.model);
    CAPTURE(spec.devices);
    CAPTURE(spec.rules);
    RunFlags f;
    f.seq = spec.seq;
    f.global_batch = spec.gb;
    f.rules = spec.rules;
    f.framework = spec.framework;
    const Model model = load_model(spec.model);
    Run run = make_run(f, true);
    run.options.fit_factor = spec.fit_factor;
    Cluster cluster = make_cluster("h100-80gb", spec.devices);
    if (spec.host_memory > 0) cluster.device.host_memory = spec.host_memory;
    SearchSpace space;
    space.model = &model;
    space.run = &run;
    space.cluster = &cluster;
    if (spec.policies_off) space.policies.on.fill(false);
    if (!spec.search_n_rc) space.policies.on[static_cast<std::size_t>(Policy::full_recompute_all)] = true;
    if (spec.offload) space.pins.offload = {Offload::none, Offload::optimizer, Offload::params};
    if (spec.tp_overlap) space.pins.tp_comm_overlap = {false, true};
    const Naive naive = naive_search(space, 10);
    CHECK(!naive.front.empty());  // each space has fitting strategies (over a million valid over the fourteen)
    if (spec.tp_overlap) {        // the overlap is on the front: the comparison covers its buffers and time
      CHECK(std::any_of(naive.front.begin(), naive.front.end(),
                        [](const ScoredStrategy& x) { return x.strategy.tp_comm_overlap; }));
    }
    // Every pass on, then each pruning pass off alone (pruning_passes.hpp): the same output.
    std::vector<std::optional<PruningPass>> variants{std::nullopt};
    for (std::size_t p = 0; p < kPruningPassCount; ++p) variants.emplace_back(static_cast<PruningPass>(p));
    for (const auto& off : variants) {
      CAPTURE(off ? pass_name(*off) : "none off");
      SearchOptions o;
      o.top_k = 10;
      if (off) o.passes = o.passes.without(*off);
      const SearchResult real = run_search(space, o);
      CHECK(real.valid == naive.valid);
      CHECK(real.fitting == naive.fitting);
      expect_same(real.front, naive.front, "front");
      expect_same(real.top, naive.top, "top");
      // Best-only (meshfit check): the same top-k, whatever it skipped.
      o.best_only = true;
      expect_same(run_search(space, o).top, naive.top, "best-only top");
    }
  }
}

TEST_CASE("pruning passes are named, and a list of names switches them off") {
  CHECK(pass_name(PruningPass::dominance_floor) == "dominance_floor");
  CHECK(pass_named("micro_batch_bisection") == PruningPass::micro_batch_bisection);
  CHECK(!pass_named("bisection"));
  const PruningPasses two = switch_off(PruningPasses::all(), "dominance_floor,top_k_floor");
  CHECK(!two.enabled(PruningPass::dominance_floor));
  CHECK(!two.enabled(PruningPass::top_k_floor));
  CHECK(two.enabled(PruningPass::rule_subtrees));
  CHECK(two == PruningPasses::all().without(PruningPass::dominance_floor).without(PruningPass::top_k_floor));
  CHECK_THROWS_WITH_AS(switch_off(PruningPasses::all(), "dominance_floor,nosuch"),
                       doctest::Contains("unknown pruning pass 'nosuch'"), std::invalid_argument);
}
