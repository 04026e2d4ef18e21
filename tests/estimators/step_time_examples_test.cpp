// The worked examples E1–E7 of docs/spec/search-and-time.md §9 (computed there with python3
// from the formulas), within the spec's tolerance: relative 5e−4 of the printed value (ruling 10).
#include <doctest/doctest.h>

#include <cmath>

#include "estimator_fixture.hpp"
#include "estimators/layer_time.hpp"
#include "search/evaluator/step_time_evaluator.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {
// Ruling 10: every printed digit matches, or the relative error is at most 5e−4.
bool close(double actual, double printed, int decimals = -1) {
  if (std::fabs(actual - printed) <= 5e-4 * std::fabs(printed)) return true;
  return decimals >= 0 && std::fabs(actual - printed) <= 0.5 * std::pow(10.0, -decimals) + 1e-12;
}
TimeReport timing(const test::Case& c) { return estimate_step_time(c.model, c.run, c.cluster, c.strategy); }
// Documented departure: the framework profiles carry kernel efficiencies and memory-bound terms
// calibrated on measured runs (torchtitan's η_fw, also per device generation, and elementwise
// passes; Megatron's elementwise, cross-entropy and unfused-score bytes, issue 20); the spec's
// examples use §7.1's defaults (η_fw = 1, no elementwise, loss or score traffic).
void neutral_kernels(Run& run) {
  run.profile.eta_fw = 1;
  run.profile.eta_fw_by_generation.clear();
  run.profile.eta_core = 1;
  run.profile.cp_core_scale = 1;
  run.profile.elementwise = false;
  run.profile.moe_routing = MoeRouting::none;
  run.profile.loss_bytes_forward = run.profile.loss_bytes_backward = 0;
  run.profile.loss_parallel_bytes_forward = run.profile.loss_parallel_bytes_backward = 0;
  run.profile.unfused_score_bytes_forward = run.profile.unfused_score_bytes_backward = 0;
  run.profile.interleaved_p2p_overlap = false;  // §7.6's default: the pipeline's hops exposed
}
// The spec's examples price every device with devices.md §2's default η_max = 0.70; the A100 and
// Hopper presets now carry fractions fitted on measured runs (data/devices/*.yaml says which).
void spec_constants(test::Case& c) {
  neutral_kernels(c.run);
  c.cluster.device.eta_max = 0.70;
}
}  // namespace

#define CHECK_CLOSE(actual, printed) CHECK_MESSAGE(close((actual), (printed)), (actual) << " vs " << (printed))
#define CHECK_DIGITS(actual, printed, decimals) \
  CHECK_MESSAGE(close((actual), (printed), (decimals)), (actual) << " vs " << (printed))

TEST_CASE("E1: Llama-3.1-8B, FSDP on 8 x H100-96GB (torchtitan, hyperparallel selective)") {
  auto c = make_case("llama-3.1-8b", 8, 8192, 16,
                     "dp=8,tp=1,sp=false,pp=1,vpp=1,cp=1,ep=1,etp=1,zero=3,shard_group=8,recompute=selective,mbs=2,m=1",
                     "torchtitan", "h100-96gb");
  c.run.options.switches = RecomputeSwitches::hyperparallel();
  spec_constants(c);
  const LayerTime l = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  CHECK_CLOSE(l.forward * 1e3, 11.9187);
  CHECK_CLOSE(l.backward * 1e3, 24.6300);
  CHECK_CLOSE(l.recompute[1] * 1e3, 5.1645);
  const TimeReport r = timing(c);
  const StageTime& st = r.stages[0];
  CHECK_CLOSE(st.forward * 1e3, 406.26);
  CHECK_CLOSE(st.backward * 1e3, 837.89);
  CHECK_CLOSE(st.recompute * 1e3, 165.26);
  CHECK_CLOSE(st.tau, 1.41467);
  CHECK_CLOSE(st.optimizer * 1e3, 19.87);
  CHECK_CLOSE(r.step, 1.4345);
  CHECK_CLOSE(r.tokens_per_sec_per_device, 11421);
  CHECK_CLOSE(r.model_flops, 6.7463e15);
  CHECK_DIGITS(r.mfu, 0.594, 3);
}

TEST_CASE("E2: Llama-3.1-70B, tp 8 x pp 4 (interleaved, vpp 5) x dp 2") {
  auto c = make_case("llama-3.1-70b", 64, 8192, 128,
                     "dp=2,tp=8,sp=true,pp=4,vpp=5,schedule=interleaved_1f1b,cp=1,ep=1,etp=1,zero=1,shard_group="
                     "2,recompute=selective,mbs=1,m=64");
  spec_constants(c);
  const LayerTime l = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  CHECK_CLOSE(l.forward * 1e3, 2.7369);
  CHECK_CLOSE(l.backward * 1e3, 5.5716);
  CHECK_CLOSE(l.recompute[1] * 1e3, 0.2000);
  CHECK_CLOSE(l.tp * 1e3, 2 * 1.5473);
  const TimeReport r = timing(c);
  CHECK_CLOSE(r.stages[0].tau, 0.23584);
  CHECK_CLOSE(r.stages[3].tau, 0.24522);
  CHECK_CLOSE(r.stages[0].comm_pp * 1e3, 3.778);
  CHECK_CLOSE(r.pipe, 15.8358);
  CHECK_CLOSE(r.bubble, 0.1415);
  CHECK_DIGITS(r.tail * 1e3, 18.8, 1);
  CHECK(r.tail_stage == 3);  // ruling 10: the head's stage sets the tail, larger by nanoseconds
  CHECK_CLOSE(r.step, 15.8545);
  CHECK_CLOSE(r.tokens_per_sec_per_device, 1033.4);
  CHECK_CLOSE(r.model_flops, 4.71044e17);
  CHECK_DIGITS(r.mfu, 0.469, 3);
}

TEST_CASE("E3: Llama-3.1-70B at 32k, tp 8 x cp 4 (ring) on 32 x H200, full recompute") {
  auto c = make_case(
      "llama-3.1-70b", 32, 32768, 8,
      "dp=1,tp=8,sp=true,pp=1,vpp=1,cp=4,cp_algo=ring,ep=1,etp=1,zero=1,shard_group=4,recompute=full,mbs=1,m=8",
      "megatron", "h200-141gb");
  spec_constants(c);
  const LayerTime l = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  CHECK_CLOSE(l.forward * 1e3, 3.3324);
  CHECK_CLOSE(l.backward * 1e3, 7.0605);
  CHECK(l.cp == 0);  // the ring hides behind the core in both directions
  const TimeReport r = timing(c);
  const StageTime& st = r.stages[0];
  CHECK_CLOSE(st.forward * 1e3, 269.72);
  CHECK_CLOSE(st.backward * 1e3, 571.10);
  CHECK_CLOSE(st.recompute * 1e3, 266.59);
  CHECK_CLOSE(st.comm_tp * 1e3, 247.57 + 123.78);  // TP plus the repeated forward TP of recompute
  CHECK_CLOSE(st.tau, 1.47877);
  CHECK_CLOSE(r.pipe, 11.8301);
  CHECK_DIGITS(r.tail * 1e3, 48.8, 1);
  CHECK_CLOSE(r.step, 11.8790);
  CHECK_CLOSE(r.tokens_per_sec_per_device, 689.6);
  CHECK_DIGITS(r.mfu, 0.381, 3);
}

TEST_CASE("E4: Mixtral-8x7B, pp 4 (1F1B) x dp 16 with ep 8") {
  auto c = make_case(
      "mixtral-8x7b", 64, 4096, 256,
      "dp=16,tp=1,sp=false,pp=4,vpp=1,schedule=1f1b,cp=1,ep=8,etp=1,zero=1,shard_group=16,recompute=none,mbs=1,m=16");
  spec_constants(c);
  const LayerTime l = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::moe);
  CHECK_CLOSE(l.forward * 1e3, 4.8728);
  CHECK_CLOSE(l.backward * 1e3, 9.8435);
  CHECK_CLOSE(l.ep * 1e3, 2 * 0.4008 + 0.0140);  // the forward's split exchange once
  const TimeReport r = timing(c);
  CHECK_CLOSE(r.stages[0].tau, 0.12576);
  CHECK_CLOSE(r.stages[3].tau, 0.13041);
  CHECK_CLOSE(r.pipe, 2.4639);
  CHECK_CLOSE(r.bubble, 0.3773);
  CHECK_DIGITS(r.tail * 1e3, 12.6, 1);
  CHECK_CLOSE(r.step, 2.4765);
  CHECK_CLOSE(r.tokens_per_sec_per_device, 6615.8);
  CHECK_CLOSE(r.model_flops, 8.35849e16);
  CHECK_DIGITS(r.mfu, 0.533, 3);
}

TEST_CASE("E5: Llama-3.1-405B, tp 8 x pp 8 (interleaved, vpp 2) x dp 16, embedding and loss as layers") {
  auto c = make_case("llama-3.1-405b", 1024, 8192, 512,
                     "dp=16,tp=8,sp=true,pp=8,vpp=2,schedule=interleaved_1f1b,cp=1,ep=1,etp=1,zero=1,shard_group=16,"
                     "recompute=selective,mbs=1,m=32");
  spec_constants(c);
  c.run.options.account_embedding = c.run.options.account_loss = true;
  const TimeReport r = timing(c);
  CHECK_CLOSE(r.stages[0].tau, 0.54563);
  CHECK_CLOSE(r.stages[1].tau, 0.58181);
  CHECK_CLOSE(r.stages[7].tau, 0.56440);  // ruling 10: the printed 0.56443 carries a rounding slip
  CHECK_CLOSE(r.pipe, 20.6273);
  CHECK_CLOSE(r.bubble, 2.0095);
  CHECK_CLOSE(r.tail, 0.3344);
  CHECK_CLOSE(r.stages[1].tail(), 0.3212);
  CHECK_CLOSE(r.stages[7].tail(), 0.3157);
  CHECK_CLOSE(r.step, 20.9617);
  CHECK_CLOSE(r.tokens_per_sec_per_device, 195.4);
  CHECK_CLOSE(r.model_flops, 1.05862e19);
  CHECK_DIGITS(r.mfu, 0.499, 3);
}

TEST_CASE("E6: Llama-3.1-8B, plain DDP across 2 nodes of 8 x A100-80GB") {
  auto c = make_case("llama-3.1-8b", 16, 4096, 64,
                     "dp=16,tp=1,sp=false,pp=1,vpp=1,cp=1,ep=1,etp=1,zero=0,recompute=full,mbs=1,m=4", "megatron",
                     "a100-80gb");
  spec_constants(c);
  const TimeReport r = timing(c);
  CHECK_CLOSE(r.stages[0].forward * 1e3, 301.86);
  CHECK_CLOSE(r.stages[0].backward * 1e3, 613.75);
  CHECK_CLOSE(r.stages[0].recompute * 1e3, 282.15);
  CHECK_CLOSE(r.stages[0].tau, 1.19776);
  CHECK_CLOSE(r.pipe, 4.7910);
  CHECK_CLOSE(r.optimizer, 0.1871);
  CHECK_CLOSE(r.tail, 0.1887);
  CHECK_CLOSE(r.step, 4.9798);
  CHECK_CLOSE(r.tokens_per_sec_per_device, 3290.1);
  CHECK_DIGITS(r.mfu, 0.509, 3);
}

TEST_CASE("E7: Llama-3.1-8B at 128k, Ulysses cp 8 x FSDP on 32 x B200") {
  auto c = make_case(
      "llama-3.1-8b", 32, 131072, 4,
      "dp=4,tp=1,sp=false,pp=1,vpp=1,cp=8,cp_algo=ulysses,ep=1,etp=1,zero=3,shard_group=32,recompute=full,mbs=1,m=1",
      "torchtitan", "b200-192gb");
  spec_constants(c);
  const LayerTime l = layer_time(c.model, c.run, c.cluster.device, c.strategy, FfnKind::dense);
  CHECK_CLOSE(l.forward * 1e3, 15.7145);
  CHECK_CLOSE(l.backward * 1e3, 37.0123);
  CHECK_CLOSE(l.cp * 1e3, 2 * 0.4940);
  const TimeReport r = timing(c);
  CHECK_CLOSE(r.stages[0].forward * 1e3, 513.80);
  CHECK_CLOSE(r.stages[0].backward * 1e3, 1206.26);
  CHECK_CLOSE(r.stages[0].comm_cp * 1e3, 31.618 + 15.81);  // ruling 10: 31.618, plus recompute's repeat
  CHECK_CLOSE(r.stages[0].tau, 2.27544);
  CHECK_CLOSE(r.step, 2.2769);
  CHECK_CLOSE(r.tokens_per_sec_per_device, 7195.7);
  CHECK_DIGITS(r.mfu, 0.474, 3);
}
