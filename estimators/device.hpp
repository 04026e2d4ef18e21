// A device preset and the cluster built from it (docs/spec/devices.md §1, symbols.md §6).
#pragma once

#include <cstdint>
#include <string>

namespace meshfit {

struct Device {
  std::string name;
  // The architecture (ampere, hopper, blackwell, ada, cdna3, cdna4, ascend; "other" when a device
  // file does not say): the device class the validation residuals are grouped by.
  std::string generation = "other";
  // Memory model (memory-model.md §11).
  double capacity = 0;                   // bytes the strategy must fit in
  double fragmentation = 0.10;           // φ = reserved/allocated − 1
  double overhead_context = 0;           // O_ctx, bytes
  double overhead_per_communicator = 0;  // O_comm, bytes
  double overhead_workspaces = 0;        // O_ws, bytes
  double overhead_ep_library = 0;        // O_ep, bytes (stages with MoE layers only)
  double overhead_fixed = 0;             // O_fixed, bytes
  // Step-time model (search-and-time.md §4, §7).
  double peak_flops = 0;              // F_peak, dense bf16 FLOP/s
  double hbm_bandwidth = 0;           // B_hbm, B/s
  std::int64_t devices_per_node = 8;  // D
  double intra_bandwidth = 0;         // B_in, B/s per device and direction
  double inter_bandwidth = 0;         // B_out, B/s per device and direction
  double eta_max = 0.70;
  double kernel_overhead = 1e-6;  // τ_kern, s
  double eta_intra = 0.70;
  double eta_inter = 0.90;
  // Inter-node all-to-all reaches less of the link than ring collectives (many peers at once,
  // incast at the receiving NICs): the fraction of η_out·B_out it gets. 1 = the §7.4 formula.
  double eta_a2a_inter = 1.0;
  double alpha_intra = 2e-6;  // s per ring step
  double alpha_inter = 5e-6;
  double eta_hbm = 0.80;
};

struct Cluster {
  Device device;
  std::int64_t devices = 0;  // N
};

}  // namespace meshfit
