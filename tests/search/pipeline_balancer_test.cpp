// The pipeline balancer (issue 23) against an exhaustive search of layouts on small models: every
// split of the layers over the stages and, under full recompute, every count of fully recomputed
// layers per stage, each estimated whole; the smallest peak whose slowest stage stays within the
// time bound must be the balancer's.
#include "search/pipeline_balancer.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "estimator_fixture.hpp"
#include "estimators/pipeline_layout.hpp"
#include "search/evaluator/step_time_evaluator.hpp"
#include "test_support.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {

// The smallest peak over every layout within the time bound (infinity: none).
double exhaustive_best(const test::Case& c, double tau_bound, std::int64_t total) {
  const auto pp = static_cast<std::size_t>(c.strategy.pp);
  const bool full = c.strategy.recompute == Recompute::full;
  Strategy s = c.strategy;
  s.recompute_layers = 0;
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::int64_t> slots(pp), rc(pp);
  std::function<void(std::size_t, std::int64_t)> recompute = [&](std::size_t i, std::int64_t) {
    if (i == pp) {
      Run r = c.run;
      r.options.layers_per_vstage = slots;
      if (full) r.options.full_layers_per_vstage = rc;
      if (!layout_counts_valid(c.model, r, s)) return;
      const MemoryReport mem = estimate_memory(c.model, r, c.cluster, s);
      const TimeReport t = estimate_step_time(c.model, r, c.cluster, s);
      double tau = 0;
      for (const auto& st : t.stages) tau = std::max(tau, st.tau);
      if (tau <= tau_bound) best = std::min(best, mem.peak);
      return;
    }
    for (std::int64_t n = 0; n <= (full ? slots[i] : 0); ++n) {
      rc[i] = n;
      recompute(i + 1, 0);
    }
  };
  std::function<void(std::size_t, std::int64_t)> split = [&](std::size_t i, std::int64_t left) {
    if (i + 1 == pp) {
      if (left < 1) return;
      slots[i] = left;
      recompute(0, 0);
      return;
    }
    for (std::int64_t n = 1; n <= left - static_cast<std::int64_t>(pp - i - 1); ++n) {
      slots[i] = n;
      split(i + 1, left - n);
    }
  };
  split(0, total);
  return best;
}

void expect_optimal(const test::Case& c, double ratio) {
  const BalancedLayout even = current_layout(c.model, c.run, c.cluster, c.strategy);
  std::int64_t total = 0;
  for (auto v : even.slots) total += v;
  const auto balanced = balance_pipeline(c.model, c.run, c.cluster, c.strategy, ratio);
  const double best = exhaustive_best(c, even.max_tau_s * ratio, total);
  REQUIRE(balanced);
  CHECK(balanced->peak_bytes == doctest::Approx(best).epsilon(1e-12));
  CHECK(balanced->peak_bytes <= even.peak_bytes);
  CHECK(balanced->max_tau_s <= even.max_tau_s * ratio * (1 + 1e-12));
  std::int64_t sum = 0;
  for (auto v : balanced->slots) sum += v;
  CHECK(sum == total);
}

}  // namespace

TEST_CASE("the balanced pipeline layout is the exhaustive search's smallest peak within the time bound") {
  const std::string gpt2 = test::data_path("models/gpt2.json");  // 12 layers
  for (double ratio : {1.0, 1.15}) {
    CAPTURE(ratio);
    // Full recompute: the layers and the recomputed layers per stage.
    expect_optimal(make_case(gpt2, 6, 1024, 24, "dp=2,tp=1,pp=3,recompute=full,mbs=1"), ratio);
    // No recompute, four stages, and torchtitan's layout (the embedding and the loss take slots).
    expect_optimal(make_case(gpt2, 8, 1024, 32, "dp=2,tp=1,pp=4,mbs=1"), ratio);
    expect_optimal(make_case(gpt2, 4, 1024, 16, "dp=2,tp=1,pp=2,zero=3,recompute=full,mbs=1", "torchtitan"), ratio);
  }
}

TEST_CASE("balancing needs a pipeline of one virtual stage per rank") {
  const std::string gpt2 = test::data_path("models/gpt2.json");
  CHECK(!balance_pipeline(make_case(gpt2, 4, 1024, 16, "dp=4,tp=1,pp=1,mbs=1").model,
                          make_case(gpt2, 4, 1024, 16, "dp=4,tp=1,pp=1,mbs=1").run,
                          make_case(gpt2, 4, 1024, 16, "dp=4,tp=1,pp=1,mbs=1").cluster,
                          make_case(gpt2, 4, 1024, 16, "dp=4,tp=1,pp=1,mbs=1").strategy, 1.0));
  const auto v = make_case(gpt2, 4, 1024, 16, "dp=1,tp=1,pp=4,vpp=3,mbs=1");
  CHECK(!balance_pipeline(v.model, v.run, v.cluster, v.strategy, 1.0));
}
