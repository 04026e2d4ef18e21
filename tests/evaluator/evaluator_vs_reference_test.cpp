// The plain reference models (estimators/reference_memory.hpp, reference_step_time.hpp) against
// the fast ones (estimate_memory, estimate_step_time, and the search's own paths): strategies drawn with a fixed seed
// from the valid strategies of many spaces — dense, GQA, MoE with EP/ETP, MLA, measured censuses, CP
// ring/Ulysses/hybrid, every schedule, uneven stages, every ZeRO stage and shard group, each framework profile, the
// seed's rules — must agree on every stage's every term. Sums may differ in their last bits (the fast paths add a run
// of n equal layers as n·x, the references x n times): 1e-12 relative, and exactly for counts, stages and flags.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/device_config.hpp"
#include "engine/model_config.hpp"
#include "engine/run_config.hpp"
#include "engine/run_options_config.hpp"
#include "engine/strategy_string.hpp"
#include "engine/yaml_fields.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "estimators/reference_memory.hpp"
#include "estimators/reference_step_time.hpp"
#include "search/evaluator/step_time_evaluator.hpp"
#include "search/search_space.hpp"
#include "test_support.hpp"

using namespace meshfit;

namespace {

bool close(double a, double b) {
  return a == b || std::fabs(a - b) <= 1e-12 * std::max({std::fabs(a), std::fabs(b), 1.0});
}

// The first field where the two reports differ ("" when none).
std::string difference(const MemoryReport& fast, const MemoryReport& ref) {
  std::ostringstream d;
  d.precision(17);
  auto num = [&](const char* name, double a, double b) {
    if (d.str().empty() && !close(a, b)) d << name << ": fast " << a << ", reference " << b;
  };
  auto exact = [&](const char* name, std::int64_t a, std::int64_t b) {
    if (d.str().empty() && a != b) d << name << ": fast " << a << ", reference " << b;
  };
  num("peak", fast.peak, ref.peak);
  exact("peak_stage", fast.peak_stage, ref.peak_stage);
  exact("fits", fast.fits, ref.fits);
  num("static_floor", fast.static_floor, ref.static_floor);
  exact("stages", static_cast<std::int64_t>(fast.stages.size()), static_cast<std::int64_t>(ref.stages.size()));
  for (std::size_t i = 0; d.str().empty() && i < fast.stages.size() && i < ref.stages.size(); ++i) {
    const StageMemory& a = fast.stages[i];
    const StageMemory& b = ref.stages[i];
    exact("layers", a.layers, b.layers);
    exact("full_recompute", a.full_recompute, b.full_recompute);
    exact("embedding", a.embedding, b.embedding);
    exact("head", a.head, b.head);
    exact("mtp_depths", a.mtp_depths, b.mtp_depths);
    num("weights", a.weights, b.weights);
    num("grads", a.grads, b.grads);
    num("optimizer", a.optimizer, b.optimizer);
    num("optimizer_moments", a.optimizer_moments, b.optimizer_moments);
    num("gathered", a.gathered, b.gathered);
    num("fp8_cache", a.fp8_cache, b.fp8_cache);
    num("deferred_grads", a.deferred_grads, b.deferred_grads);
    num("pipeline_buffers", a.pipeline_buffers, b.pipeline_buffers);
    exact("chunks", static_cast<std::int64_t>(a.chunk_bytes.size()), static_cast<std::int64_t>(b.chunk_bytes.size()));
    for (std::size_t c = 0; c < a.chunk_bytes.size() && c < b.chunk_bytes.size(); ++c)
      num("chunk_bytes", a.chunk_bytes[c], b.chunk_bytes[c]);
    if (a.chunk_inflight != b.chunk_inflight && d.str().empty()) d << "chunk_inflight";
    num("activations", a.activations, b.activations);
    num("tr_layer", a.tr_layer, b.tr_layer);
    exact("tr_layer_at", a.tr_layer_at, b.tr_layer_at);
    num("tr_attn", a.tr_attn, b.tr_attn);
    num("tr_logits", a.tr_logits, b.tr_logits);
    num("tr_fsdp", a.tr_fsdp, b.tr_fsdp);
    num("tr_bucket", a.tr_bucket, b.tr_bucket);
    num("tr_cp", a.tr_cp, b.tr_cp);
    num("tr_ep", a.tr_ep, b.tr_ep);
    num("tr_dpv", a.tr_dpv, b.tr_dpv);
    num("transient", a.transient, b.transient);
    num("step_transient", a.step_transient, b.step_transient);
    exact("step_phase_binds", a.step_phase_binds, b.step_phase_binds);
    num("allocated", a.allocated, b.allocated);
    num("reserved", a.reserved, b.reserved);
    exact("communicators", a.communicators, b.communicators);
    num("communicator_buffers", a.communicator_buffers, b.communicator_buffers);
    num("ep_library", a.ep_library, b.ep_library);
    num("device", a.device, b.device);
    if (!d.str().empty()) d << " (stage " << i << ")";
  }
  return d.str();
}

std::string time_difference(const TimeReport& fast, const TimeReport& ref) {
  std::ostringstream d;
  d.precision(17);
  auto num = [&](const char* name, double a, double b) {
    if (d.str().empty() && !close(a, b)) d << name << ": fast " << a << ", reference " << b;
  };
  num("step", fast.step, ref.step);
  num("pipe", fast.pipe, ref.pipe);
  num("tail", fast.tail, ref.tail);
  if (d.str().empty() && (fast.slowest_stage != ref.slowest_stage || fast.tail_stage != ref.tail_stage)) d << "stages";
  num("forward", fast.forward, ref.forward);
  num("backward", fast.backward, ref.backward);
  num("recompute", fast.recompute, ref.recompute);
  num("comm_tp", fast.comm_tp, ref.comm_tp);
  num("comm_cp", fast.comm_cp, ref.comm_cp);
  num("comm_ep", fast.comm_ep, ref.comm_ep);
  num("comm_pp", fast.comm_pp, ref.comm_pp);
  num("comm_zero", fast.comm_zero, ref.comm_zero);
  num("bubble", fast.bubble, ref.bubble);
  num("comm_dp", fast.comm_dp, ref.comm_dp);
  num("optimizer", fast.optimizer, ref.optimizer);
  num("tokens_per_sec_per_device", fast.tokens_per_sec_per_device, ref.tokens_per_sec_per_device);
  num("mfu", fast.mfu, ref.mfu);
  for (std::size_t i = 0; d.str().empty() && i < fast.stages.size() && i < ref.stages.size(); ++i) {
    const StageTime& a = fast.stages[i];
    const StageTime& b = ref.stages[i];
    num("stage forward", a.forward, b.forward);
    num("stage backward", a.backward, b.backward);
    num("stage weight_grad", a.weight_grad, b.weight_grad);
    num("stage recompute", a.recompute, b.recompute);
    num("stage comm_tp", a.comm_tp, b.comm_tp);
    num("stage comm_cp", a.comm_cp, b.comm_cp);
    num("stage comm_ep", a.comm_ep, b.comm_ep);
    num("stage comm_pp", a.comm_pp, b.comm_pp);
    num("stage comm_zero", a.comm_zero, b.comm_zero);
    num("stage tau", a.tau, b.tau);
    num("stage comm_dp", a.comm_dp, b.comm_dp);
    num("stage optimizer", a.optimizer, b.optimizer);
    if (!d.str().empty()) d << " (stage " << i << ")";
  }
  return d.str();
}

struct SpaceSpec {
  SpaceSpec(std::string m, std::int64_t n, std::int64_t s, std::int64_t b, std::string fw = "megatron",
            std::string r = "default", bool off = false, std::string options = "")
      : model(std::move(m)),
        devices(n),
        seq(s),
        gb(b),
        framework(std::move(fw)),
        rules(std::move(r)),
        policies_off(off),
        run_options(std::move(options)) {}
  std::string model;
  std::int64_t devices, seq, gb;
  std::string framework, rules;
  bool policies_off;        // every practice rule off: uneven stages, every schedule and CP algorithm
  std::string run_options;  // YAML text of run options
};

}  // namespace

TEST_CASE("reference models = fast models on 100,000+ strategies of 29 spaces") {
  const std::string d = test::data_path("models/");
  const std::vector<SpaceSpec> specs = {
      {"llama-3.1-8b", 8, 4096, 64},
      {"llama-3.1-8b", 64, 8192, 256, "torchtitan"},
      {"llama-3.1-8b", 32, 4096, 128, "deepspeed"},
      {"llama-3.1-70b", 64, 8192, 512},
      {"llama-3.1-70b", 256, 8192, 1024, "megatron", "default", true},
      {"llama-3.1-405b", 1024, 8192, 2048},
      {"gpt3-175b", 128, 2048, 1536, "megatron", "default", true},
      {"qwen3-32b", 32, 32768, 64, "torchtitan", "default", true},
      {"mixtral-8x7b", 64, 4096, 256},
      {"mixtral-8x7b", 32, 4096, 128, "megatron", "sapp-nd"},
      {"qwen3-30b-a3b", 16, 4096, 64},
      {"qwen3-30b-a3b", 16, 4096, 64, "megatron", "sapp-nd", true},
      {"deepseek-v3", 256, 4096, 1024},
      {"deepseek-v3", 1024, 4096, 4096, "megatron", "sapp-nd"},
      // SAPP-ND's conventions (memory-model.md §17.5) switched off in turn.
      {"deepseek-v3", 512, 4096, 2048, "megatron", "sapp-nd:-resident_comm,-seed_attention,-no_step_phase"},
      {"mixtral-8x7b", 32, 4096, 128, "megatron", "sapp-nd:-last_node_overhead,-table_shard,-seed_output"},
      {"qwen3-30b-a3b", 16, 4096, 64, "megatron", "sapp-nd:-expert_tp_literal,-no_clip_case", false,
       "grad_clip: true\n"},
      {"deepseek-v3", 512, 4096, 2048, "megatron", "default", false, "grad_clip: true\ngrad_clip_model: seed\n"},
      {d + "deepseek-v2-lite.json", 16, 2048, 64, "megatron", "default", true},
      {d + "gpt2.json", 8, 1024, 32, "megatron", "default", true},
      {d + "mistral-7b-v0.1.json", 16, 8192, 64, "torchtitan"},
      {d + "qwen2-7b.json", 16, 4096, 64, "deepspeed", "default", true},
      {d + "qwen3-8b.json", 8, 16384, 16},
      {d + "tiny-moe.yaml", 16, 2048, 64, "megatron", "default", true},
      {d + "custom-symbols.yaml", 8, 2048, 32, "megatron", "default", true},
      {d + "llama-8b-census.yaml", 16, 4096, 64},
      {"llama-3.1-8b", 16, 4096, 64, "megatron", "default", true, "recompute_rest: selective\n"},
      // PyTorch pipelining's buffers (every stage's outputs kept, a compiled loss's logits held),
      // and deferred gradients a chunk at a time (few micro-batches per pipeline stage).
      {"llama-3.1-70b", 64, 8192, 64, "torchtitan", "default", true, "pipeline_outputs: all\ncompiled_loss: true\n"},
      {"llama-3.1-8b", 32, 8192, 64, "torchtitan", "default", true, "pipeline_outputs: none\n"},
  };
  std::mt19937_64 rng(20261201);
  constexpr std::size_t kPerSpace = 4500;
  std::size_t compared = 0;
  std::uint64_t contexts = 1u << 30;  // memo contexts of this test's own (the search counts from 1)
  for (const SpaceSpec& spec : specs) {
    CAPTURE(spec.model);
    CAPTURE(spec.devices);
    CAPTURE(spec.rules);
    const Model model = load_model(spec.model);
    RunFlags f;
    f.seq = spec.seq;
    f.global_batch = spec.gb;
    f.framework = spec.framework;
    f.rules = spec.rules;
    Run run = make_run(f, true);
    if (!spec.run_options.empty()) apply_run_options(parse_yaml_text(spec.run_options, "test"), "test", run);
    const Cluster cluster = make_cluster(test::data_path("devices/every-overhead.yaml"), spec.devices);
    SearchSpace space;
    space.model = &model;
    space.run = &run;
    space.cluster = &cluster;
    if (spec.policies_off) space.policies.on.fill(false);
    // A reservoir of kPerSpace valid strategies, drawn with the fixed seed.
    std::vector<Strategy> sample;
    std::size_t seen = 0;
    for (const auto& t : space.triples()) {
      space.for_each(
          t,
          [&](const Strategy& s, const Position& at) {
            if (at.failed != Position::kValid) return;
            ++seen;
            if (sample.size() < kPerSpace) {
              sample.push_back(s);
            } else if (const std::size_t j = rng() % seen; j < kPerSpace) {
              sample[j] = s;
            }
          },
          [](std::size_t, std::int64_t) {});
    }
    REQUIRE(!sample.empty());
    // The search's own path too: totals only, with the per-thread reuse (memo context, kind
    // cache, stored layouts) on, over the sample in its random order.
    MemoryScratch scratch;
    scratch.memo_context = ++contexts;
    MemoryReport lean;
    StepTimeScratch time_scratch;
    time_scratch.memo_context = scratch.memo_context;
    TimeReport timed;
    for (const Strategy& s : sample) {
      const MemoryReport ref = reference_memory(model, run, cluster, s);
      std::string diff = difference(estimate_memory(model, run, cluster, s), ref);
      estimate_memory_into(lean, scratch, model, run, cluster, s, 0, false);
      if (diff.empty() && !(close(lean.peak, ref.peak) && lean.peak_stage == ref.peak_stage && lean.fits == ref.fits &&
                            close(lean.static_floor, ref.static_floor))) {
        diff = "the search's totals: peak " + std::to_string(lean.peak) + " on stage " +
               std::to_string(lean.peak_stage) + ", reference " + std::to_string(ref.peak) + " on stage " +
               std::to_string(ref.peak_stage);
      }
      const TimeReport ref_time = reference_step_time(model, run, cluster, s);
      if (diff.empty()) diff = time_difference(estimate_step_time(model, run, cluster, s), ref_time);
      estimate_step_time_into(timed, time_scratch, model, run, cluster, s, scratch.layout_plan(model, run, s));
      if (diff.empty()) diff = time_difference(timed, ref_time);
      if (!diff.empty()) {
        FAIL_CHECK(strategy_to_string(s) << ": " << diff);
        break;
      }
      ++compared;
    }
  }
  CHECK(compared >= 100000);
}
