#include "estimators/attention_tiles.hpp"

#include <cmath>

namespace meshfit {

namespace {

double causal_tiles(double tokens) { return (tokens / kAttentionTile + 1) / 2; }

}  // namespace

double key_tiles_per_query_tile(double seq, double window, double chunk) {
  if (chunk > 0 && chunk < seq) return causal_tiles(chunk);  // a last, shorter chunk taken as whole
  const double n_q = seq / kAttentionTile;
  if (window <= 0 || window >= seq) return causal_tiles(seq);
  const double k = std::ceil((window - 1) / kAttentionTile) + 1;
  if (n_q <= k) return causal_tiles(seq);
  // Query tile j visits min(j + 1, k) key tiles: 1 + 2 + … + k, then k for each of the rest.
  return (k * (k + 1) / 2 + (n_q - k) * k) / n_q;
}

double tiled_core_share(const Model& m, double seq) {
  if (m.layer_window.empty() && m.layer_chunk.empty()) return 1;
  const double causal = causal_tiles(seq) + kQueryTileOverhead;
  return mean_over_attention_layers(m, [&](double window, double chunk) {
    return (key_tiles_per_query_tile(seq, window, chunk) + kQueryTileOverhead) / causal;
  });
}

}  // namespace meshfit
