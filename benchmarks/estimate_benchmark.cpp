// Nanoseconds per memory estimate (issue 3: aim under 1 µs for a dense model without the
// interleaved simulation) and per step-time estimate (issue 4). Prints figures; never fails a build.
#include <benchmark/benchmark.h>

#include <vector>

#include "engine/device_config.hpp"
#include "engine/model_config.hpp"
#include "engine/run_config.hpp"
#include "engine/strategy_string.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "search/evaluator/step_time_evaluator.hpp"

namespace {

struct Inputs {
  meshfit::Model model;
  meshfit::Run run;
  meshfit::Cluster cluster;
  meshfit::Strategy strategy;
};

Inputs make(const char* model, std::int64_t devices, std::int64_t seq, std::int64_t gb, const char* strategy) {
  Inputs in{meshfit::load_model(model), {}, meshfit::make_cluster("h100-80gb", devices), {}};
  meshfit::RunFlags f;
  f.seq = seq;
  f.global_batch = gb;
  in.run = meshfit::make_run(f, true);
  std::vector<std::string> warnings;
  in.strategy = meshfit::parse_strategy(strategy, in.model, in.run, in.cluster, warnings);
  return in;
}

// As the search scores: storage reused from estimate to estimate (the `_alloc` cases build a
// fresh report each time, as `meshfit estimate` does).
void run_case(benchmark::State& state, const Inputs& in) {
  meshfit::MemoryReport report;
  meshfit::MemoryScratch scratch;
  for (auto _ : state) {
    meshfit::estimate_memory_into(report, scratch, in.model, in.run, in.cluster, in.strategy);
    benchmark::DoNotOptimize(report.peak);
  }
  state.SetItemsProcessed(state.iterations());
}
void run_case_alloc(benchmark::State& state, const Inputs& in) {
  for (auto _ : state) {
    auto report = meshfit::estimate_memory(in.model, in.run, in.cluster, in.strategy);
    benchmark::DoNotOptimize(report.peak);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Llama70B_pp1(benchmark::State& state) {
  static const Inputs in = make("llama-3.1-70b", 64, 8192, 512, "tp=8,sp=true,zero=1,recompute=selective");
  run_case(state, in);
}
void BM_Llama70B_pp1_alloc(benchmark::State& state) {
  static const Inputs in = make("llama-3.1-70b", 64, 8192, 512, "tp=8,sp=true,zero=1,recompute=selective");
  run_case_alloc(state, in);
}
void BM_Llama70B_pp4_1f1b(benchmark::State& state) {
  static const Inputs in = make("llama-3.1-70b", 64, 8192, 512, "tp=8,sp=true,pp=4,zero=1,recompute=selective");
  run_case(state, in);
}
void BM_Llama70B_pp4_interleaved(benchmark::State& state) {
  static const Inputs in = make("llama-3.1-70b", 64, 8192, 512, "tp=8,sp=true,pp=4,vpp=5,zero=1,recompute=selective");
  run_case(state, in);
}
void BM_DeepSeekV3_pp16(benchmark::State& state) {
  static const Inputs in = make("deepseek-v3", 1024, 4096, 2048, "tp=2,sp=true,pp=16,ep=64,zero=1,recompute=full");
  run_case(state, in);
}

void BM_StepTime_Llama70B_pp4_interleaved(benchmark::State& state) {
  static const Inputs in = make("llama-3.1-70b", 64, 8192, 512, "tp=8,sp=true,pp=4,vpp=5,zero=1,recompute=selective");
  for (auto _ : state) {
    auto report = meshfit::estimate_step_time(in.model, in.run, in.cluster, in.strategy);
    benchmark::DoNotOptimize(report.step);
  }
  state.SetItemsProcessed(state.iterations());
}
void BM_StepTime_DeepSeekV3_pp16(benchmark::State& state) {
  static const Inputs in = make("deepseek-v3", 1024, 4096, 2048, "tp=2,sp=true,pp=16,ep=64,zero=1,recompute=full");
  for (auto _ : state) {
    auto report = meshfit::estimate_step_time(in.model, in.run, in.cluster, in.strategy);
    benchmark::DoNotOptimize(report.step);
  }
  state.SetItemsProcessed(state.iterations());
}

// As the search scores the ZeRO settings of one setting of everything else: the activation side
// (memory) and the compute side (time) kept, only the (z, G) parts redone. Memory and step time
// per iteration, alternating two settings.
void BM_DeepSeekV3_pp16_zero_settings(benchmark::State& state) {
  static const Inputs a = make("deepseek-v3", 1024, 4096, 2048, "tp=2,sp=true,pp=16,ep=64,zero=1,recompute=full");
  static const Inputs b = make("deepseek-v3", 1024, 4096, 2048, "tp=2,sp=true,pp=16,ep=64,zero=3,recompute=full");
  meshfit::MemoryReport report;
  meshfit::MemoryScratch scratch;
  meshfit::TimeReport time;
  meshfit::StepTimeScratch time_scratch;
  scratch.memo_context = time_scratch.memo_context = 1;
  bool flip = false;
  for (auto _ : state) {
    const Inputs& in = flip ? b : a;
    flip = !flip;
    meshfit::estimate_memory_into(report, scratch, in.model, in.run, in.cluster, in.strategy);
    meshfit::estimate_step_time_into(time, time_scratch, in.model, in.run, in.cluster, in.strategy,
                                     scratch.prepare_plan(in.model, in.strategy));
    benchmark::DoNotOptimize(report.peak);
    benchmark::DoNotOptimize(time.step);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_Llama70B_pp1);
BENCHMARK(BM_Llama70B_pp1_alloc);
BENCHMARK(BM_StepTime_Llama70B_pp4_interleaved);
BENCHMARK(BM_StepTime_DeepSeekV3_pp16);
BENCHMARK(BM_Llama70B_pp4_1f1b);
BENCHMARK(BM_Llama70B_pp4_interleaved);
BENCHMARK(BM_DeepSeekV3_pp16);
BENCHMARK(BM_DeepSeekV3_pp16_zero_settings);

}  // namespace

BENCHMARK_MAIN();
