// A device preset and the cluster built from it (docs/spec/devices.md §1, symbols.md §6).
#pragma once

#include <cstdint>
#include <string>

namespace meshfit {

// H100 SXM's fp8 over bf16 maximum achievable matmul FLOPS, 1402.6 / 794.5 TFLOP/s (Stas Bekman's
// ml-engineering, compute/accelerator/README.md, its BF16 and FP8 MAMF tables): the ratio under
// which the frameworks' FP8 GEMM speedups were fitted (data/frameworks/*.yaml).
inline constexpr double kHopperFp8MatmulRatio = 1402.6 / 794.5;

struct Device {
  std::string name;
  // The architecture (ampere, hopper, blackwell, ada, cdna3, cdna4, ascend; "other" when a device
  // file does not say): the device class the validation residuals are grouped by.
  std::string generation = "other";
  // Memory model (memory-model.md §11).
  double capacity = 0;          // bytes the strategy must fit in
  double fragmentation = 0.16;  // φ = (reserved − allocated) / (allocated − persistent model states)
  // φ_min: the share of what the step allocates and frees (M_alloc less the model states) that
  // PyTorch's caching allocator cannot hand back when memory runs short (the free tails of
  // segments that still hold live blocks): before it reports an
  // out-of-memory error it frees every cached segment with no live block and retries
  // (c10/cuda/CUDACachingAllocator.cpp, release_cached_blocks), so a stage whose M_alloc fits
  // with this much to spare runs, its reserved squeezed to what is left (memory-model.md §11).
  double fragmentation_floor = 0.04;
  double overhead_context = 0;           // O_ctx, bytes
  double overhead_per_communicator = 0;  // O_comm, bytes
  double overhead_workspaces = 0;        // O_ws, bytes
  double overhead_ep_library = 0;        // O_ep, bytes (stages with MoE layers only)
  double overhead_fixed = 0;             // O_fixed, bytes
  // Step-time model (search-and-time.md §4, §7).
  double peak_flops = 0;              // F_peak, dense bf16 FLOP/s
  double hbm_bandwidth = 0;           // B_hbm, B/s
  std::int64_t devices_per_node = 8;  // D
  // The GPUs one job places in one NVLink domain when that is fewer than the domain (0: all D).
  // A GB200/GB300 NVL72 rack holds 72 GPUs in 18 trays of 4, and its scheduler lays a job out in
  // segments of whole trays: Megatron-Bridge's launcher passes SLURM --segment as the largest
  // divisor of the job's trays up to 18 (scripts/performance/utils/executors.py), so a
  // power-of-two job of 64 GPUs or more runs 64 per rack and its groups of up to 64 stay on
  // NVLink, where 72 / 64 would not.
  std::int64_t domain_segment = 0;
  // D as a job's groups see it: how many of its ranks share one NVLink domain (rank_layout.hpp).
  std::int64_t placement_domain() const { return domain_segment > 0 ? domain_segment : devices_per_node; }
  double intra_bandwidth = 0;  // B_in, B/s per device and direction
  double inter_bandwidth = 0;  // B_out, B/s per device and direction
  double eta_max = 0.70;
  // The device's fp8 matmul rate over its bf16 one at their best shapes (maximum achievable matmul
  // FLOPS, devices.md §2). The frameworks' FP8 speedups were fitted on Hopper, so a device's FP8
  // linears run at them times fp8_matmul_ratio / kHopperFp8MatmulRatio (layer_time.cpp).
  double fp8_matmul_ratio = kHopperFp8MatmulRatio;
  // Dense bf16 tensor-core FLOPs per clock per SM over exponentials per clock per SM on its
  // special-function units: how much a narrow attention head pays for its softmax
  // (attention_head_width.hpp). 0: not stated, no head-width correction.
  double tensor_flops_per_exp = 0;
  double kernel_overhead = 1e-6;  // τ_kern, s
  double eta_intra = 0.70;
  double eta_inter = 0.90;
  // Inter-node all-to-all reaches less of the link than ring collectives (many peers at once,
  // incast at the receiving NICs): the fraction of η_out·B_out it gets. 1 = the §7.4 formula.
  double eta_a2a_inter = 1.0;
  double alpha_intra = 2e-6;  // s per ring step
  double alpha_inter = 5e-6;
  double eta_hbm = 0.80;
  // Host side, for offloaded model states (issue 23; devices.md §1). 0: not stated, and a strategy
  // that offloads is refused on such a device rather than priced on a guess.
  double host_memory = 0;            // B of host memory per device (the node's share)
  double host_reserved = 0;          // B of it a rank's own process and the OS keep
  double host_link_bandwidth = 0;    // B/s per device and direction, device <-> host
  double eta_host_link = 0.85;       // share of it pinned-memory copies reach
  double host_memory_bandwidth = 0;  // B/s of host memory per device (the node's share)
  double eta_host_memory = 0.50;     // share of it a CPU optimizer streams at
  bool has_host() const { return host_memory > 0 && host_link_bandwidth > 0 && host_memory_bandwidth > 0; }
};

struct Cluster {
  Device device;
  std::int64_t devices = 0;  // N
};

}  // namespace meshfit
