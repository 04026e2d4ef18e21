// Megatron-Core's rotary position embedding on q and k: Transformer Engine's fused kernel, or the
// plain tensor ops of its unfused path (megatron/core/models/common/embeddings/rope_utils.py,
// apply_rotary_pos_emb and _apply_rotary_pos_emb_bshd), and the HBM bytes each moves.
#pragma once

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// Whether Megatron-Core runs the rotary unfused. MLA: unless the run fuses it
// (RunOptions::rope_fusion, --apply-rope-fusion; Megatron-Bridge's DeepSeek providers leave it
// off). GQA: fused by default (apply_rope_fusion, on unless --no-rope-fusion), except where YaRN
// scales the cos and sin (Model::rope_attention_factor ≠ 1): Transformer Engine's fused RoPE takes
// no such scale, so apply_rotary_pos_emb falls back to the unfused ops ("mscale ... is not
// supported by TE's fused RoPE. Using unfused implementation", rope_utils.py @23265d2).
bool megatron_rotary_unfused(const Model& m, const RunOptions& o);

// Rotated elements per token on one device: the query heads' and the key heads' rotary widths
// (MLA: every head's rotary part, d_rope), over the TP shard.
double rotated_elements_per_token(const Model& m, const Strategy& s);

// HBM traffic of the rotary per rotated element, in units of β_a: forward and backward.
// Fused: one read and one write each way, which the elementwise census already counts (2 and
// 2 × 2, layer_time.cpp). Unfused, per op of _apply_rotary_pos_emb_bshd: forward t·cos (read 1,
// write 1), the rotated half's negation (½, ½) and concatenation (1, 1), its product with sin
// (1, 1), the sum (2, 1) and the concatenation with the empty unrotated rest (1, 1): 12;
// backward the two products' gradients (2 + 2), the negation's (1), the halves' concatenation
// (2), the branches' sum (3), the rotated slice's zero-filled gradient and copy (1 + 2), the
// empty rest's zero fill (1) and their sum (3): 17. MLA first de-interleaves the even and odd
// channels (its strided slices concatenated, 1 + 1 forward; each slice's zero fill and copy,
// 2 × (1 + 1), and their sum, 3, backward): 14 and 24.
struct RotaryPasses {
  double forward = 0, backward = 0;
};
RotaryPasses megatron_rotary_passes(const Model& m, bool unfused);

}  // namespace meshfit
