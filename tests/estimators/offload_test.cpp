// Offloaded model states (issue 23; memory-model.md §6.4, search-and-time.md §7.9.1): what leaves
// the device, what the host holds, the second budget and the time, against hand-computed values.
#include <doctest/doctest.h>

#include "estimator_fixture.hpp"
#include "estimators/reference_memory.hpp"
#include "estimators/reference_step_time.hpp"
#include "same_reports.hpp"
#include "search/evaluator/step_time_evaluator.hpp"

using namespace meshfit;
using meshfit::test::make_case;

namespace {

// Llama-3.1-8B's parameters (parameter_counts_test: 8,030,261,248), one eighth per rank under
// ZeRO over the 8 ranks of one node (tp = pp = 1: the vocabulary 128,256 needs no padding).
constexpr double kParams = 8'030'261'248.0;
constexpr double kShard = kParams / 8;

test::Case llama8b(const std::string& strategy) {
  return make_case("llama-3.1-8b", 8, 4096, 8, strategy);  // Megatron: β_P 2, β_G 4, β_opt 12
}

}  // namespace

TEST_CASE("offload=optimizer: the optimizer leaves the device, the host holds it with fp32 grads") {
  const auto kept = llama8b("dp=8,zero=1,mbs=1");
  const auto off = llama8b("dp=8,zero=1,offload=optimizer,mbs=1");
  const MemoryReport a = reference_memory(kept.model, kept.run, kept.cluster, kept.strategy);
  const MemoryReport b = reference_memory(off.model, off.run, off.cluster, off.strategy);
  // Device: 12 B of optimizer state per shard element before, none after; weights and grads stay.
  CHECK_BYTES(a.stages[0].optimizer, 12 * kShard);
  CHECK(b.stages[0].optimizer == 0);
  CHECK(b.stages[0].weights == a.stages[0].weights);
  CHECK(b.stages[0].grads == a.stages[0].grads);
  // Host: β_opt 12 + the 4 B fp32 gradient the CPU optimizer steps on, per shard element = 2·P.
  CHECK_BYTES(b.host_peak, 16 * kShard);
  CHECK_BYTES(b.host_peak, 16'060'522'496.0);
  CHECK(a.host_peak == 0);
  // The budget: DGX H100's 256 GiB per GPU less 16 GiB for the process.
  CHECK(b.host_budget == 240.0 * (1 << 30));
  CHECK(b.host_fits);
  // The evaluator the search uses agrees.
  test::check_same_memory(b, test::estimate(off));
}

TEST_CASE("offload=params: every sharded state leaves the device") {
  const auto c = llama8b("dp=8,zero=3,offload=params,mbs=1");
  const MemoryReport r = reference_memory(c.model, c.run, c.cluster, c.strategy);
  CHECK(r.stages[0].weights == 0);
  CHECK(r.stages[0].grads == 0);
  CHECK(r.stages[0].optimizer == 0);
  // β_P 2 + fp32 gradient 4 + β_opt 12 per shard element.
  CHECK_BYTES(r.host_peak, 18 * kShard);
  test::check_same_memory(r, test::estimate(c));
}

TEST_CASE("a host too small for the offloaded states does not fit") {
  auto c = llama8b("dp=8,zero=1,offload=optimizer,mbs=1");
  c.cluster.device.host_memory = 16 * kShard + c.cluster.device.host_reserved - 1;  // one byte short
  const MemoryReport r = reference_memory(c.model, c.run, c.cluster, c.strategy);
  CHECK(r.peak <= r.budget);  // the device side fits
  CHECK_FALSE(r.host_fits);
  CHECK_FALSE(r.fits);
  test::check_same_memory(r, test::estimate(c));
  c.cluster.device.host_memory += 1;
  CHECK(reference_memory(c.model, c.run, c.cluster, c.strategy).fits);
}

TEST_CASE("offload time: the shard out, the CPU step, the parameters back (ZeRO-Offload's step)") {
  const auto c = llama8b("dp=8,zero=1,offload=optimizer,mbs=1");
  const TimeReport t = reference_step_time(c.model, c.run, c.cluster, c.strategy);
  // DGX H100: PCIe Gen5 63 GB/s at η 0.85, host memory 76.8 GB/s per GPU at η 0.5. Adam on the
  // CPU streams 28 B of fp32 state and writes the bf16 parameter (2 B).
  const double link = 0.85 * 63e9, host = 0.5 * 76.8e9;
  const double expected = kShard * 4 / link + kShard * (28 + 2) / host + kShard * 2 / link;
  CHECK(t.stages[0].optimizer == doctest::Approx(expected).epsilon(1e-12));
  CHECK(t.optimizer == doctest::Approx(expected).epsilon(1e-12));
  // The search's evaluator prices it the same.
  CHECK(estimate_step_time(c.model, c.run, c.cluster, c.strategy).step == t.step);
}

TEST_CASE("offload=params: the copies join the gathers and reduce-scatters, the step is the CPU's") {
  const auto on = llama8b("dp=8,zero=3,offload=params,mbs=1");
  const auto off = llama8b("dp=8,zero=3,mbs=1");
  const TimeReport a = reference_step_time(on.model, on.run, on.cluster, on.strategy);
  const TimeReport b = reference_step_time(off.model, off.run, off.cluster, off.strategy);
  CHECK(a.stages[0].optimizer == doctest::Approx(kShard * 30 / (0.5 * 76.8e9)).epsilon(1e-12));
  CHECK(a.stages[0].comm_zero >= b.stages[0].comm_zero);
  CHECK(a.step > b.step);
}

TEST_CASE("rule H24: offload needs sharding, a stated host, and the standard rules") {
  RunFlags f;
  f.seq = 4096;
  f.global_batch = 8;
  const Model m = load_model("llama-3.1-8b");
  const Run run = make_run(f, true);
  std::vector<std::string> w;
  const Cluster h100 = make_cluster("h100-80gb", 8);
  const auto broken = [&](const std::string& s, const Cluster& c, const Run& r) {
    return first_broken_rule(m, r, c, parse_strategy(s, m, r, c, w, false));
  };
  CHECK(broken("dp=8,zero=1,offload=optimizer", h100, run) == HardRule::ok);
  CHECK(broken("dp=8,zero=0,offload=optimizer", h100, run) == HardRule::H24);
  CHECK(broken("dp=8,zero=2,offload=params", h100, run) == HardRule::H24);
  CHECK(broken("dp=8,zero=3,offload=params", h100, run) == HardRule::ok);
  // A device that states no host side (MI300X's preset: its hosts are the OEMs' own) cannot
  // offload, and says why.
  const Cluster mi300x = make_cluster("mi300x-192gb", 8);
  const Strategy s = parse_strategy("dp=8,zero=1,offload=optimizer", m, run, mi300x, w, false);
  CHECK(first_broken_rule(m, run, mi300x, s) == HardRule::H24);
  CHECK(explain_rule(HardRule::H24, m, run, mi300x, s).find("states no host side") != std::string::npos);
  // GB200 states its Grace CPU's share: 480 GB of LPDDR5X over two GPUs, 16 GiB of it reserved.
  const Cluster gb200 = make_cluster("gb200-186gb", 8);
  CHECK(gb200.device.has_host());
  CHECK(gb200.device.host_memory == 240e9);
  CHECK(broken("dp=8,zero=1,offload=optimizer", gb200, run) == HardRule::ok);
  // The seed rules price only their own swap flag.
  f.rules = "sapp-nd";
  CHECK(broken("dp=8,zero=1,offload=optimizer", h100, make_run(f, true)) == HardRule::H24);
}
