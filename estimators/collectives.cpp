#include "estimators/collectives.hpp"

#include <algorithm>

#include "estimators/rank_layout.hpp"

namespace meshfit {

Group make_group(const Device& d, std::int64_t stride, std::int64_t size) {
  Group g;
  g.size = size;
  const GroupPlacement p = place_group(stride, size, d.devices_per_node);
  g.inside_node = p.inside_node;
  g.per_node = p.per_node;
  const double intra = d.eta_intra * d.intra_bandwidth;
  // §4: a rail-optimised ring leaves the node through n_in NICs in parallel.
  g.ring_bandwidth = p.inside_node ? intra
                                   : std::min(intra, static_cast<double>(p.per_node) * d.eta_inter * d.inter_bandwidth);
  g.alpha = p.inside_node ? d.alpha_intra : d.alpha_inter;
  return g;
}

double all_reduce(const Group& g, double S) {
  if (g.size <= 1 || S <= 0) return 0;
  const double n = static_cast<double>(g.size);
  return 2 * (n - 1) * g.alpha + 2 * (n - 1) / n * S / g.ring_bandwidth;
}

double reduce_scatter(const Group& g, double S) {
  if (g.size <= 1 || S <= 0) return 0;
  const double n = static_cast<double>(g.size);
  return (n - 1) * g.alpha + (n - 1) / n * S / g.ring_bandwidth;
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
