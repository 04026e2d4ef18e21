// The layout plan (search/evaluator/layout_plan.hpp): its per-stage layer counts, and its twin chunks —
// chunks whose runs match an earlier chunk's, whose activations the memory model copies instead of
// walking again. A copy must give exactly the estimate of walking every chunk.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "estimator_fixture.hpp"
#include "estimators/same_reports.hpp"
#include "search/evaluator/layout_plan.hpp"
#include "estimators/pipeline_layout.hpp"
#include "search/evaluator/step_time_evaluator.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {

LayoutPlan plan_of(const test::Case& c, bool find_twins = true) {
  LayoutPlan plan;
  make_layout_plan(plan, c.model, make_layout(c.model, c.run, c.strategy), c.strategy.pp, c.strategy.vpp,
                   c.strategy.recompute == Recompute::full, find_twins);
  return plan;
}

bool same_runs(const LayoutPlan& p, const PlannedChunk& a, const PlannedChunk& b) {
  if (a.end - a.begin != b.end - b.begin) return false;
  for (std::uint32_t k = 0; k < a.end - a.begin; ++k) {
    const PlannedRun &x = p.runs[a.begin + k], &y = p.runs[b.begin + k];
    if (x.count != y.count || x.kind != y.kind || x.full != y.full) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("layout plan: layer counts per (kind, fully recomputed) and stage") {
  // DeepSeek-V3: 61 body layers, the first 3 dense (first_k_dense_replace), the rest MoE.
  const auto none =
      make_case("deepseek-v3", 256, 4096, 1024, "dp=16,tp=4,sp=true,pp=4,ep=32,zero=1,recompute=none,mbs=1");
  const LayoutPlan p = plan_of(none);
  std::int64_t dense = 0, moe = 0;
  for (const PlannedStage& ps : p.stages) {
    CHECK(ps.body_layers[0][1] == 0);  // nothing fully recomputed
    CHECK(ps.body_layers[1][1] == 0);
    CHECK(ps.body_layers[0][0] + ps.body_layers[1][0] == ps.layers);
    dense += ps.body_layers[0][0];
    moe += ps.body_layers[1][0];
  }
  CHECK(dense == 3);
  CHECK(moe == 58);
  CHECK(p.stages[0].body_layers[0][0] == 3);  // the dense layers open the model
  // Full recompute of every layer (n_rc unset): all counted as fully recomputed.
  const auto full =
      make_case("deepseek-v3", 256, 4096, 1024, "dp=16,tp=4,sp=true,pp=4,ep=32,zero=1,recompute=full,mbs=1");
  const LayoutPlan q = plan_of(full);
  for (std::size_t i = 0; i < q.stages.size(); ++i) {
    CHECK(q.stages[i].body_layers[0][0] + q.stages[i].body_layers[1][0] == 0);
    CHECK(q.stages[i].body_layers[0][1] == p.stages[i].body_layers[0][0]);
    CHECK(q.stages[i].body_layers[1][1] == p.stages[i].body_layers[1][0]);
  }
}

TEST_CASE("layout plan: twins are earlier chunks with the same runs, away from the model's ends") {
  // Llama-3.1-70B, pp 4 × vpp 5: 20 virtual stages of the 80 dense layers, so most chunks hold
  // the same single run and all but the first of those are twins.
  const auto c = make_case("llama-3.1-70b", 64, 8192, 512, "dp=4,tp=4,sp=true,pp=4,vpp=5,zero=1,recompute=none,mbs=1");
  const LayoutPlan p = plan_of(c);
  const std::int64_t nv = c.strategy.pp * c.strategy.vpp;
  int twins = 0;
  for (std::uint32_t k = 0; k < p.chunks.size(); ++k) {
    const PlannedChunk& pc = p.chunks[k];
    CAPTURE(k);
    if (pc.twin == PlannedChunk::kNoTwin) continue;
    ++twins;
    CHECK(pc.twin < k);
    CHECK(p.chunks[pc.twin].walked);
    CHECK(p.chunks[pc.twin].twin == PlannedChunk::kNoTwin);
    CHECK(same_runs(p, p.chunks[pc.twin], pc));
    CHECK(pc.vstage != 0);
    CHECK(pc.vstage != nv - 1);
  }
  // At most one walked chunk per distinct run signature among the 18 inner virtual stages.
  int walked = 0;
  for (const PlannedChunk& pc : p.chunks) walked += pc.walked ? 1 : 0;
  CHECK(twins + walked <= 18);
  CHECK(twins >= 18 - 2 * walked);
  CHECK(twins >= 10);
  // Each stage's chunks split into those walked (in order, no repeat) and its repeats with their
  // twins: every chunk in exactly one of the two.
  int repeats = 0;
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const PlannedStage& ps = p.stages[i];
    std::vector<int> seen(static_cast<std::size_t>(c.strategy.vpp), 0);
    std::int64_t previous = -1;
    for (std::uint32_t k = ps.walk_begin; k < ps.walk_end; ++k) {
      const std::uint32_t ch = p.walk_chunks[k];
      CHECK(static_cast<std::int64_t>(ch) > previous);
      previous = ch;
      CHECK_FALSE(p.chunk(static_cast<std::int64_t>(i), ch).repeat);
      ++seen[ch];
    }
    for (std::uint32_t k = ps.repeat_begin; k < ps.repeat_end; ++k) {
      const auto& [ch, twin] = p.repeat_chunks[k];
      const PlannedChunk& pc = p.chunk(static_cast<std::int64_t>(i), ch);
      CHECK(pc.repeat);
      CHECK(pc.twin == twin);
      ++seen[ch];
      ++repeats;
    }
    for (const int n : seen) CHECK(n == 1);
  }
  CHECK(repeats > 0);
  // Without twins nothing is copied.
  for (const PlannedChunk& pc : plan_of(c, false).chunks) {
    CHECK(pc.twin == PlannedChunk::kNoTwin);
    CHECK_FALSE(pc.walked);
  }
}

TEST_CASE("layout plan: stage twins hold the same model-state parts, away from the model's ends") {
  // DeepSeek-V3 over pp 8: the dense layers open stage 0, the head closes stage 7, and the MoE
  // stages between with as many layers as an earlier one are its twins.
  const auto c = make_case("deepseek-v3", 256, 4096, 1024, "dp=4,tp=8,sp=true,pp=8,ep=32,zero=1,recompute=none,mbs=1");
  const LayoutPlan p = plan_of(c);
  int twins = 0;
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const PlannedStage& ps = p.stages[i];
    CAPTURE(i);
    if (ps.twin == PlannedStage::kNoTwin) continue;
    ++twins;
    const PlannedStage& q = p.stages[ps.twin];
    CHECK(ps.twin < i);
    CHECK(q.twin == PlannedStage::kNoTwin);
    const bool ends = ps.embedding || ps.head || q.embedding || q.head;
    CHECK_FALSE(ends);
    CHECK(ps.layers == q.layers);
    CHECK(ps.body_layers == q.body_layers);
    REQUIRE(ps.parts_end - ps.parts_begin == q.parts_end - q.parts_begin);
    for (std::uint32_t k = 0; k < ps.parts_end - ps.parts_begin; ++k)
      CHECK(p.parts[ps.parts_begin + k] == p.parts[q.parts_begin + k]);
  }
  CHECK(p.stages.front().twin == PlannedStage::kNoTwin);
  CHECK(p.stages.back().twin == PlannedStage::kNoTwin);
  CHECK(twins >= 4);  // six inner stages of 7–8 MoE layers: at most two signatures
  for (const PlannedStage& ps : plan_of(c, false).stages) CHECK(ps.twin == PlannedStage::kNoTwin);
}

TEST_CASE("twin chunks and stages copied give exactly the estimates of walking every one") {
  const char* strategies[][2] = {
      {"llama-3.1-70b", "dp=4,tp=4,sp=true,pp=4,vpp=5"},
      {"llama-3.1-70b", "dp=4,tp=4,sp=true,pp=8,vpp=2"},
      {"deepseek-v3", "dp=8,tp=8,sp=true,pp=4,vpp=2,ep=32"},
      {"deepseek-v3", "dp=4,tp=8,sp=true,pp=8,ep=32"},
      {"deepseek-v3", "dp=8,tp=8,sp=true,pp=4,vpp=2,pp_schedule=dualpipev,ep=32"},
      {"mixtral-8x7b", "dp=4,tp=2,sp=true,pp=8,vpp=2,ep=4"},
  };
  const char* tails[] = {"zero=1,recompute=none,mbs=1", "zero=3,recompute=selective,mbs=2",
                         "zero=1,recompute=full,mbs=1", "zero=2,recompute=full,recompute_layers=3,mbs=1"};
  int checked = 0;
  for (const auto& [model, base] : strategies) {
    for (const char* tail : tails) {
      for (const int variant : {0, 1}) {  // 1: the grad-clip seed adjustment (per-chunk full layers)
        const std::string text = std::string(base) + "," + tail;
        CAPTURE(text);
        CAPTURE(variant);
        const bool moe = std::string(model) != "llama-3.1-70b";
        test::Case c;
        try {
          c = make_case(model, moe ? 256 : 64, moe ? 4096 : 8192, moe ? 1024 : 512, text);
        } catch (const std::exception&) {
          continue;  // a combination the model cannot take
        }
        if (variant == 1) c.run.options.grad_clip = c.run.options.grad_clip_seed = true;
        MemoryScratch copied, walked;
        walked.walk_every_chunk = true;
        MemoryReport a, b;
        estimate_memory_into(a, copied, c.model, c.run, c.cluster, c.strategy);
        estimate_memory_into(b, walked, c.model, c.run, c.cluster, c.strategy);
        test::check_same_memory(a, b);
        // The step time reads the plan's stage twins too: the same figures with and without.
        StepTimeScratch ta, tb;
        TimeReport with_twins, without;
        estimate_step_time_into(with_twins, ta, c.model, c.run, c.cluster, c.strategy, plan_of(c, true));
        estimate_step_time_into(without, tb, c.model, c.run, c.cluster, c.strategy, plan_of(c, false));
        test::check_same_time(with_twins, without);
        ++checked;
      }
    }
  }
  CHECK(checked >= 30);
}
