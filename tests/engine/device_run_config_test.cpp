// Device presets and YAML overrides (docs/spec/devices.md), and run flags with the framework
// profiles of memory-model.md §2.6.
#include <doctest/doctest.h>

#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "engine/presets.hpp"
#include "engine/run_config.hpp"
#include "estimators/collectives.hpp"
#include "estimators/layer_time.hpp"
#include "test_support.hpp"

using namespace meshfit;

namespace {
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("every device of cli.md is bundled, with devices.md's figures") {
  const std::vector<std::string> want = {
      "a100-40gb",   "a100-80gb",   "a800-80gb",    "ascend-910b-64gb", "b200-192gb",  "b300-288gb",
      "gb200-186gb", "gb300-288gb", "h100-80gb",    "h100-96gb",        "h20-96gb",    "h200-141gb",
      "h800-80gb",   "l40s-48gb",   "mi300x-192gb", "mi325x-256gb",     "mi355x-288gb"};
  CHECK(preset_names("devices") == want);
  // H800: the H100 SXM5 with NVLink cut to 400 GB/s both ways (NVIDIA's H800 datasheet).
  const Device h800 = load_device("h800-80gb");
  CHECK(h800.peak_flops == 989e12);
  CHECK(h800.intra_bandwidth == 200e9);
  CHECK(h800.inter_bandwidth == 50e9);
  // A800: the A100 80 GB with NVLink cut from 600 to 400 GB/s both ways.
  const Device a800 = load_device("a800-80gb");
  CHECK(a800.peak_flops == 312e12);
  CHECK(a800.hbm_bandwidth == 2039e9);
  CHECK(a800.intra_bandwidth * 2 == 400e9);
  // HGX B300: 36 PFLOP/s sparse bf16 for 8 GPUs, dense half; 275,040 MiB in nvidia-smi; 7.7 TB/s;
  // NVLink 5 at 1.8 TB/s both ways; ConnectX-8 at 800 Gb/s.
  const Device b300 = load_device("b300-288gb");
  CHECK(b300.peak_flops * 8 * 2 == 36e15);
  CHECK(b300.capacity == 275040.0 * 1024 * 1024);
  CHECK(b300.hbm_bandwidth == 7.7e12);
  CHECK(b300.intra_bandwidth * 2 == 1.8e12);
  CHECK(b300.inter_bandwidth * 8 == 800e9);
  const Device h100 = load_device("H100-80GB");
  CHECK(h100.capacity == 85'520'809'984.0);  // 81,559 MiB
  CHECK(h100.peak_flops == 989e12);
  CHECK(h100.hbm_bandwidth == 3350e9);
  CHECK(h100.devices_per_node == 8);
  CHECK(h100.intra_bandwidth == 450e9);
  CHECK(h100.inter_bandwidth == 50e9);
  CHECK(h100.fragmentation == 0.16);
  CHECK(h100.overhead_context == 512.0 * 1024 * 1024);
  CHECK(h100.overhead_per_communicator == 256.0 * 1024 * 1024);
  CHECK(h100.overhead_workspaces == 64.0 * 1024 * 1024);
  CHECK(load_device("a100-40gb").capacity == 40960.0 * 1024 * 1024);
  CHECK(load_device("mi300x-192gb").peak_flops == 1307.4e12);
  // GB200 NVL72 (NVIDIA's GB200 NVL72 datasheet): 180 PFLOP/s dense BF16 and 576 TB/s of HBM for 72
  // GPUs, one NVLink domain of 72 at 1.8 TB/s per GPU both ways.
  const Device gb200 = load_device("gb200-186gb");
  CHECK(gb200.peak_flops * 72 == 180e15);
  CHECK(gb200.hbm_bandwidth * 72 == 576e12);
  CHECK(gb200.devices_per_node == 72);
  CHECK(gb200.intra_bandwidth * 2 == 1.8e12);
}

TEST_CASE("NVL72: a job's groups of up to 64 stay on NVLink, its segment of a rack") {
  // A group of 64 consecutive ranks (EP 64) does not divide the rack's 72, but a job runs 64 per
  // rack (domain_segment): inside the domain, at NVLink's η_intra·B_intra, 0.70 · 900 GB/s.
  const Device gb200 = load_device("gb200-186gb");
  CHECK(gb200.domain_segment == 64);
  CHECK(gb200.placement_domain() == 64);
  const Group ep = make_group(gb200, 1, 64);
  CHECK(ep.inside_node);
  CHECK(ep.ring_bandwidth == doctest::Approx(0.70 * 900e9));
  // A group across racks (stride 64, one rank per rack) leaves each through its own NIC.
  const Group across = make_group(gb200, 64, 4);
  CHECK_FALSE(across.inside_node);
  CHECK(across.per_node == 1);
  CHECK(across.ring_bandwidth == doctest::Approx(0.90 * 50e9));
  // Eight-GPU nodes place groups on the node, as before.
  const Device h100 = load_device("h100-80gb");
  CHECK(h100.placement_domain() == 8);
  CHECK_FALSE(make_group(h100, 1, 64).inside_node);
  CHECK(make_group(h100, 1, 64).per_node == 8);
}

TEST_CASE("a device YAML starts from a preset and overrides fields") {
  const Device d = load_device(test::data_path("devices/h100-lowfrag.yaml"));
  CHECK(d.name == "h100-lowfrag");
  CHECK(d.fragmentation == 0.02);
  CHECK(d.overhead_fixed == 1073741824.0);
  CHECK(d.capacity == 85'520'809'984.0);
}

TEST_CASE("bad device input") {
  CHECK(error_of([] {
          load_device(test::data_path("bad/device-missing.yaml"));
        }).find("field 'hbm_bandwidth': missing") != std::string::npos);
  CHECK(error_of([] { load_device(test::data_path("bad/device-typo.yaml")); }).find("field 'capacty': unknown field") !=
        std::string::npos);
  CHECK(error_of([] { load_device(test::data_path("bad/device-negative.yaml")); }).find("field 'capacity'") !=
        std::string::npos);
  // Figures that would make times or bytes overflow (a step of infinite seconds printed as null).
  CHECK(error_of([] {
          load_device(test::data_path("bad/device-tiny-flops.yaml"));
        }).find("field 'peak_flops': expected at least 1e+06, got 1e-300") != std::string::npos);
  CHECK(error_of([] {
          load_device(test::data_path("bad/device-huge-overhead.yaml"));
        }).find("field 'overhead_fixed': expected a number in [0, 1.1259e+15], got '1e308'") != std::string::npos);
  const std::string e = error_of([] { load_device("h100"); });
  CHECK(e.find("unknown device preset 'h100'") != std::string::npos);
  CHECK(e.find("did you mean h100-80gb, h100-96gb") != std::string::npos);
  CHECK(error_of([] { make_cluster("h100-80gb", 0); }).find("--devices") != std::string::npos);
  CHECK(error_of([] {
          load_device(test::data_path("bad/device-segment.yaml"));
        }).find("field 'domain_segment': expected 1 to devices_per_node (8), got 16") != std::string::npos);
}

TEST_CASE("FP8 linears: the GEMM speedup of the scaling recipe, from the framework profile") {
  RunFlags f;
  f.seq = 8192;
  f.global_batch = 512;
  f.framework = "torchtitan";
  Run titan = make_run(f, true);
  Strategy s;
  const Device hopper = load_device("h100-80gb");
  CHECK(kernel_scales(titan, hopper, s).linear == 1.0);  // bf16: the profile's eta_fw
  titan.options.fp8_linears = true;
  // torchtitan.yaml: the GEMMs alone (its casts are priced apart, fp8_casts: torchao):
  // tensorwise 1.6, rowwise 1.3, each times eta_fw 1.0.
  CHECK(titan.profile.fp8_casts == Fp8Casts::torchao);
  CHECK(kernel_scales(titan, hopper, s).linear == 1.0 * 1.6);
  titan.options.fp8_scaling = Fp8Scaling::rowwise;
  CHECK(kernel_scales(titan, hopper, s).linear == 1.0 * 1.3);
  // Megatron's profile states no rowwise speedup: rowwise is priced as its tensorwise 1.4.
  f.framework = "megatron";
  Run mega = make_run(f, true);
  mega.options.fp8_linears = true;
  mega.options.fp8_scaling = Fp8Scaling::rowwise;
  CHECK(kernel_scales(mega, hopper, s).linear == 1.0 * 1.4);
  // On B200 the fp8 matmuls gain 3432.5/1745 = 1.9670 (the preset's four places) over bf16 against
  // H100's 1402.6/794.5 = 1.765387 (their maximum achievable matmul FLOPS): 1.4 · 1.9670 / 1.765387
  // = 1.559885.
  const Device b200 = load_device("b200-192gb");
  CHECK(kernel_scales(mega, b200, s).linear == doctest::Approx(1.559885).epsilon(1e-6));
}

TEST_CASE("a framework's kernel scale on one device generation replaces eta_fw there only") {
  RunFlags f;
  f.seq = 8192;
  f.global_batch = 512;
  Run mega = make_run(f, true);
  Strategy s;
  const Device hopper = load_device("h100-80gb"), b200 = load_device("b200-192gb");
  mega.profile.eta_fw_by_generation = {{"cdna3", 0.9}, {"blackwell", 0.5}};
  CHECK(kernel_scales(mega, hopper, s).linear == 1.0);
  const KernelScales k = kernel_scales(mega, b200, s);
  CHECK(k.linear == 0.5);
  CHECK(k.other == 0.5);
  CHECK(k.core == 0.5 * mega.profile.eta_core);
  // FP8 linears: the same scale times the B200 speedup of the test above, 1.559885.
  mega.options.fp8_linears = true;
  CHECK(kernel_scales(mega, b200, s).linear == doctest::Approx(0.5 * 1.559885).epsilon(1e-6));
  // Compute-bound, a kernel's time is F / (η_max · scale · F_peak) + τ / (η_max · scale): halving the
  // scale doubles it. B200: 1e12 FLOP / (0.61 · 0.5 · 2.25e15) + 1e-6 / (0.61 · 0.5) = 1.460474e-3 s.
  CHECK(kernel_time(b200, k.linear, 1e12) == doctest::Approx(1e12 / (0.61 * 0.5 * 2.25e15) + 1e-6 / (0.61 * 0.5)));
  CHECK(kernel_time(b200, k.linear, 1e12) == doctest::Approx(1.460474e-3).epsilon(1e-6));
  // torchtitan.yaml's own: its runs on Blackwell at 0.40 of its Hopper kernel efficiency, on CDNA 3
  // and 4 at 0.67 (the fits in the profile's comment).
  f.framework = "torchtitan";
  const Run titan = make_run(f, true);
  CHECK(kernel_scales(titan, b200, s).linear == 0.40);
  CHECK(kernel_scales(titan, load_device("mi300x-192gb"), s).linear == 0.67);
  CHECK(kernel_scales(titan, load_device("mi355x-288gb"), s).linear == 0.67);
  CHECK(kernel_scales(titan, hopper, s).linear == 1.0);
}

TEST_CASE("framework profiles set the precision and padding defaults (§2.6)") {
  RunFlags f;
  f.seq = 8192;
  f.global_batch = 512;
  Run mega = make_run(f, true);
  CHECK(mega.precision.preset == "megatron_bf16");
  CHECK(mega.profile.vocab_pad_multiple == 128);
  CHECK(mega.beta_opt() == 12);                                                  // 2 fp32 moments + fp32 master
  CHECK(mega.precision.beta_P + mega.precision.beta_G + mega.beta_opt() == 18);  // Megatron's 18 B/param

  f.framework = "torchtitan";
  Run titan = make_run(f, true);
  CHECK(titan.precision.preset == "fsdp2_bf16");
  CHECK(titan.profile.vocab_pad_multiple == 1);
  CHECK(titan.profile.reshard_after_forward == ReshardAfterForward::automatic);
  CHECK(titan.precision.beta_P + titan.precision.beta_G + titan.beta_opt() == 16);

  f.framework = "deepspeed";
  Run ds = make_run(f, true);
  CHECK(ds.precision.beta_P + ds.precision.beta_G + ds.beta_opt() == 16);  // ZeRO's 2 + 2 + 12
  CHECK(ds.profile.grad_bucket_elements == 5e8);

  f.framework = "megatron";
  f.optimizer = "sgd_momentum";
  f.grad_bytes = 2;
  Run sgd = make_run(f, true);
  CHECK(sgd.beta_opt() == 8);
  CHECK(sgd.precision.beta_G == 2);
}

TEST_CASE("bad run flags") {
  RunFlags f;
  CHECK(error_of([&] { make_run(f, true); }).find("field '--seq': missing") != std::string::npos);
  f.seq = 0;
  f.global_batch = 8;
  CHECK(error_of([&] { make_run(f, true); }).find("field '--seq': expected a positive integer, got 0") !=
        std::string::npos);
  // Past 2^24 tokens or sequences: products with the parallel degrees would leave 64-bit integers.
  f.seq = 4096;
  f.global_batch = std::int64_t{1} << 40;
  CHECK(error_of([&] {
          make_run(f, true);
        }).find("field '--global-batch': expected at most 16777216, got 1099511627776") != std::string::npos);
  f.global_batch = 8;
  f.seq = 4096;
  f.micro_batch = 3;
  CHECK(error_of([&] { make_run(f, true); }).find("expected a divisor of --global-batch 8") != std::string::npos);
  f.micro_batch = 2;
  f.framework = "nemo";
  CHECK(error_of([&] { make_run(f, true); }).find("'--framework': expected one of deepspeed, megatron, torchtitan") !=
        std::string::npos);
  f.framework = "megatron";
  f.grad_bytes = 3;
  CHECK(error_of([&] { make_run(f, true); }).find("'--grad-bytes': expected 2 or 4") != std::string::npos);
  f.grad_bytes.reset();
  f.rules = "sapp";
  CHECK(error_of([&] { make_run(f, true); }).find("'--rules'") != std::string::npos);
}
