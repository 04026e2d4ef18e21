// Gradient clipping's copy of a fully recomputed layer's gradients (docs/spec/memory-model.md
// §9.9; the seed's rule, docs/spec §17.3 item 10, and grad_clip_model: seed): clipping
// materialises an optimizer-state-sized copy of the layer's gradients, held in place of the
// layer's in-flight inputs when it is the larger, plus the gathered parameters' DP communication.
#pragma once

#include "estimators/model_states.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// True when the estimate prices the copy: clipping on, under the seed's rules or grad_clip_model: seed.
bool grad_clip_adjusts(const Run& run);

// The copy of one layer's gradients, in the optimizer-state dtype and sharding.
double grad_clip_copy(const RankParams& layer, const ZeroDivisors& z, const Run& run);
// The layer's DP communication that accompanies it: its gathered parameters under ZeRO 3, else 0.
double grad_clip_dp_comm(const RankParams& layer, const Strategy& s, const Run& run);

// What one fully recomputed layer adds to its stage's in-flight activations: with `fwd` the
// inputs it keeps in flight (its K_1 times the micro-batches in flight), it keeps the larger of
// fwd and the copy (fwd where fwd + dpc beats the copy), plus dpc when it keeps anything.
double grad_clip_addition(double fwd, double copy, double dp_comm);

}  // namespace meshfit
