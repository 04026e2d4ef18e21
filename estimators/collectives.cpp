#include "estimators/collectives.hpp"

#include <algorithm>

#include "estimators/rank_layout.hpp"

namespace meshfit {

Group make_group(const Device& d, std::int64_t stride, std::int64_t size, bool tree) {
  Group g;
  g.size = size;
  g.tree = tree;
  const GroupPlacement p = place_group(stride, size, d.placement_domain());
  g.inside_node = p.inside_node;
  g.per_node = p.per_node;
  const double intra = d.eta_intra * d.intra_bandwidth;
  // §4: a rail-optimised ring leaves the node through n_in NICs in parallel.
  g.ring_bandwidth =
      p.inside_node ? intra : std::min(intra, static_cast<double>(p.per_node) * d.eta_inter * d.inter_bandwidth);
  g.alpha = p.inside_node ? d.alpha_intra : d.alpha_inter;
  return g;
}

namespace {
// Latency steps of a reduce-scatter or all-gather: n − 1 ring steps, or ⌈log2 n⌉ with the tree
// option (§7.4); an all-reduce takes twice as many.
double steps(const Group& g) {
  if (!g.tree) return static_cast<double>(g.size - 1);
  double levels = 0;
  for (std::int64_t reach = 1; reach < g.size; reach *= 2) ++levels;
  return levels;
}
}  // namespace

double all_reduce(const Group& g, double S) {
  if (g.size <= 1 || S <= 0) return 0;
  const double n = static_cast<double>(g.size);
  return 2 * steps(g) * g.alpha + 2 * (n - 1) / n * S / g.ring_bandwidth;
}

double reduce_scatter(const Group& g, double S) {
  if (g.size <= 1 || S <= 0) return 0;
  const double n = static_cast<double>(g.size);
  return steps(g) * g.alpha + (n - 1) / n * S / g.ring_bandwidth;
}

double all_gather(const Group& g, double S) { return reduce_scatter(g, S); }

double all_to_all(const Group& g, const Device& d, double S) {
  if (g.size <= 1 || S <= 0) return 0;
  const double n = static_cast<double>(g.size), n_in = static_cast<double>(g.per_node);
  const double intra = d.eta_intra * d.intra_bandwidth, inter = d.eta_a2a_inter * d.eta_inter * d.inter_bandwidth;
  if (g.inside_node) return (n - 1) * d.alpha_intra + (n - 1) / n * S / intra;
  return (n - 1) * d.alpha_inter + std::max((n_in - 1) / n * S / intra, (n - n_in) / n * S / inter);
}

double node_dedup_all_to_all(const Group& g, const Device& d, double S, double S_remote) {
  if (g.size <= 1 || S <= 0) return 0;
  if (g.inside_node) return all_to_all(g, d, S);
  const double n = static_cast<double>(g.size);
  // The NIC at the all-to-all's share (η_a2a·η_inter, 0.59 on H100): HybridEP's own H100 table
  // (DeepEP hybrid-ep branch, Hybrid-EP_Implementation.md) gives about 0.54 of the NIC on two nodes
  // and 0.72-0.83 on eight once its algorithm bandwidth's home-node share is taken out.
  const double intra = d.eta_intra * d.intra_bandwidth, inter = d.eta_a2a_inter * d.eta_inter * d.inter_bandwidth;
  // Every copy but the member's own crosses NVLink once, directly or forwarded at its node.
  return (n - 1) * d.alpha_inter + std::max((n - 1) / n * S / intra, S_remote / inter);
}

double point_to_point(const Device& d, bool inside_node, double S) {
  if (S <= 0) return 0;
  return inside_node ? d.alpha_intra + S / (d.eta_intra * d.intra_bandwidth)
                     : d.alpha_inter + S / (d.eta_inter * d.inter_bandwidth);
}

}  // namespace meshfit
