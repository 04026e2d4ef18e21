// Alpha-beta costs of collectives over a group laid out in rank order
// (docs/spec/search-and-time.md §4, §7.4).
#pragma once

#include <cstdint>

#include "estimators/device.hpp"

namespace meshfit {

struct Group {
  std::int64_t size = 1;  // n_g
  bool inside_node = true;
  std::int64_t per_node = 1;  // n_in
  double ring_bandwidth = 0;  // B_eff
  double alpha = 0;           // latency per ring step
  bool tree = false;          // latency_model = tree: ⌈log2 n_g⌉ latency steps instead of n_g − 1
};

// The group of `size` ranks with stride `stride` on `device`'s nodes.
// `tree`: §7.4's option latency_model = tree (NCCL's choice for very large groups).
Group make_group(const Device& device, std::int64_t stride, std::int64_t size, bool tree = false);

// Each member's full buffer `S` (bytes); a group of one, or 0 bytes, costs 0 (ruling 8).
double all_reduce(const Group& g, double bytes);
double reduce_scatter(const Group& g, double bytes);               // S: each member's full input
double all_gather(const Group& g, double bytes);                   // S: each member's full output
double all_to_all(const Group& g, const Device& d, double bytes);  // S: bytes each member sends
// A dispatch that sends each token once to every other node holding one of its experts, NVLink
// forwarding it there (DeepEP, HybridEP): `bytes` as all_to_all, `remote_bytes` what crosses the
// member's NIC. Inside a node it is all_to_all.
double node_dedup_all_to_all(const Group& g, const Device& d, double bytes, double remote_bytes);
// A point-to-point hop, inside a node or across.
double point_to_point(const Device& d, bool inside_node, double bytes);

}  // namespace meshfit
