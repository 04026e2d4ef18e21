// The search reuses a strategy's activation side (memory) and compute side (step time) across
// ZeRO settings (search/evaluator/zero_free_memo.hpp). A reused estimate must equal a fresh one in every
// reported field, whatever came before it in the same scratch; and the search's estimate of the
// totals alone (no stage detail) the fresh one's totals.
#include <doctest/doctest.h>

#include <array>
#include <stdexcept>
#include <vector>

#include "estimator_fixture.hpp"
#include "estimators/same_reports.hpp"
#include "search/evaluator/step_time_evaluator.hpp"

using namespace meshfit;
using meshfit::test::check_same_memory;
using meshfit::test::check_same_time;
using meshfit::test::make_case;

TEST_CASE("estimates reused across ZeRO settings equal fresh ones") {
  // Strategies in the search's order: the ZeRO setting outside the recompute mode and the
  // micro-batch size, so that the later settings find the activation side kept.
  struct Family {
    const char* model;
    std::int64_t devices, seq, gb;
    const char* base;  // everything but zero, shard_group, recompute, mbs
    int variant = 0;   // 1: grad_clip_model seed; 2: --rules sapp-nd; 3: torchtitan (FSDP2: per-layer
                       // gathers, root and last block held, deferred gradient sync with pp > 1)
  };
  const Family families[] = {
      {"deepseek-v3", 256, 4096, 1024, "dp=8,tp=8,sp=true,pp=4,vpp=2,ep=32"},
      {"deepseek-v3", 256, 4096, 1024, "dp=8,tp=8,sp=true,pp=4,vpp=2,pp_schedule=dualpipev,ep=32"},
      {"mixtral-8x7b", 64, 4096, 256, "dp=8,tp=2,sp=true,pp=4,ep=8"},
      {"llama-3.1-70b", 64, 8192, 512, "dp=4,tp=4,sp=true,pp=2,cp=2,cp_algo=ring"},
      {"llama-3.1-70b", 64, 8192, 512, "dp=4,tp=4,sp=true,pp=4,vpp=2", 1},
      {"mixtral-8x7b", 64, 4096, 256, "dp=8,tp=2,sp=true,pp=4,ep=8", 2},
      {"llama-3.1-70b", 64, 8192, 512, "dp=8,tp=4,sp=true,pp=2", 3},
      {"llama-3.1-70b", 64, 8192, 512, "dp=64,tp=1,pp=1", 3},  // pp 1: FSDP2 reshards after forward, gathers per layer
      {"deepseek-v3", 256, 4096, 1024, "dp=8,tp=8,sp=true,pp=4,ep=32", 3},
  };
  const char* zeros[] = {"zero=0", "zero=1,shard_group=2", "zero=2", "zero=3", "zero=3,shard_group=4"};
  const char* modes[] = {"recompute=none", "recompute=selective", "recompute=full",
                         "recompute=full,recompute_layers=2"};
  const char* sizes[] = {"mbs=1", "mbs=2"};
  // Both orders: the search's (ZeRO outermost: the memory's (z, G) side is reused across modes
  // and sizes), and ZeRO innermost (consecutive estimates differ only in z and G, so every
  // (z, G)-dependent part must be redone while the activation side is reused).
  for (const bool zero_outer : {true, false}) {
    for (const auto& f : families) {
      CAPTURE(std::string(f.base));
      CAPTURE(zero_outer);
      MemoryScratch scratch;
      scratch.memo_context = 7;
      StepTimeScratch time_scratch;
      time_scratch.memo_context = 7;
      MemoryScratch totals_scratch;  // the search's way: totals only, no stage detail
      totals_scratch.memo_context = 7;
      MemoryReport reused, totals;
      TimeReport reused_time;
      int checked = 0;
      std::vector<std::array<std::size_t, 3>> order;  // (zero, mode, size) indices, in visiting order
      for (std::size_t a = 0; a < 5; ++a) {
        for (std::size_t b = 0; b < 4; ++b) {
          for (std::size_t c = 0; c < 2; ++c) order.push_back({a, b, c});
        }
      }
      if (!zero_outer) {
        order.clear();
        for (std::size_t b = 0; b < 4; ++b) {
          for (std::size_t c = 0; c < 2; ++c) {
            for (std::size_t a = 0; a < 5; ++a) order.push_back({a, b, c});
          }
        }
      }
      for (const auto& [zi, ri, bi] : order) {
        const std::string text = std::string(f.base) + "," + zeros[zi] + "," + modes[ri] + "," + sizes[bi];
        CAPTURE(text);
        meshfit::test::Case c;
        try {
          c = make_case(f.model, f.devices, f.seq, f.gb, text, f.variant == 3 ? "torchtitan" : "megatron");
        } catch (const std::exception&) {
          continue;  // a combination the model cannot take (H16's shard-group clause, ...)
        }
        if (f.variant == 1) c.run.options.grad_clip = c.run.options.grad_clip_seed = true;
        if (f.variant == 2) c.run.rules = Rules::sapp_nd;
        estimate_memory_into(reused, scratch, c.model, c.run, c.cluster, c.strategy);
        const MemoryReport fresh = estimate_memory(c.model, c.run, c.cluster, c.strategy);
        check_same_memory(reused, fresh);
        estimate_memory_into(totals, totals_scratch, c.model, c.run, c.cluster, c.strategy, 0, false);
        CHECK(totals.stages.empty());
        CHECK(totals.peak == fresh.peak);
        CHECK(totals.peak_stage == fresh.peak_stage);
        CHECK(totals.fits == fresh.fits);
        CHECK(totals.static_floor == fresh.static_floor);
        // A detailed estimate from the totals' scratch: its side, kept without in-flight counts,
        // is made again with them.
        MemoryReport detailed;
        estimate_memory_into(detailed, totals_scratch, c.model, c.run, c.cluster, c.strategy);
        check_same_memory(detailed, fresh);
        estimate_step_time_into(reused_time, time_scratch, c.model, c.run, c.cluster, c.strategy,
                                scratch.prepare_plan(c.model, c.strategy));
        check_same_time(reused_time, estimate_step_time(c.model, c.run, c.cluster, c.strategy));
        ++checked;
      }
      CHECK(checked >= 16);  // most of the 40 combinations are valid strategies
    }
  }
}

TEST_CASE("a memo keeps an entry per setting and forgets everything when its context changes") {
  ZeroFreeMemo<int> memo;
  Strategy s;
  s.zero = 1;
  s.shard_group = 2;
  bool fresh = false;
  memo.find(1, s, fresh) = 41;
  CHECK(fresh);
  s.zero = 3;  // another ZeRO setting: the same entry
  CHECK(memo.find(1, s, fresh) == 41);
  CHECK_FALSE(fresh);
  s.micro_batch = 2;  // another micro-batch size: a new entry
  memo.find(1, s, fresh) = 42;
  CHECK(fresh);
  s.micro_batch = 1;
  CHECK(memo.find(1, s, fresh) == 41);
  CHECK_FALSE(fresh);
  memo.find(2, s, fresh);  // another search
  CHECK(fresh);
  s.tp = 2;  // another setting of the outer dimensions: everything fresh
  memo.find(2, s, fresh);
  CHECK(fresh);
  memo.find(0, s, fresh);  // context 0: never reused
  CHECK(fresh);
  memo.find(0, s, fresh);
  CHECK(fresh);
}
