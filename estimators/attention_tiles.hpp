// What a fused attention kernel spends on a layer with a sliding window or chunks, against a full
// causal layer of the same tokens. A flash-attention kernel (cuDNN's SDPA, FlashAttention,
// FlexAttention's block-sparse loop) cuts the queries into tiles of B rows and, for each, loops
// over the key tiles of B keys that any of its queries sees, skipping only the tiles none sees;
// every query tile also pays a fixed cost outside that loop (loading its queries, the softmax's
// final rescale, storing its output and log-sum-exp). So a query tile costs (n + c) key-tile
// iterations, n the tiles it visits and c the fixed part in the same unit, and a layer whose
// queries see 128 keys costs far more than its 128-key share of the FLOPs: n = 2 tiles (its window
// straddles two) against a causal layer's (s/B + 1)/2 on average, and c beside both.
//
// c from the causal kernel's own rate against the sequence length, where (n + c) per tile makes
// the rate R∞·n/(n + c): cuDNN's SDPA benchmark (NVIDIA/cudnn-frontend benchmark/
// sdpa_benchmark_training/results, llama3.1 shape: 64 query and 8 key heads of 128, bf16, causal,
// 2,048 to 16,384 tokens) fits c = 5.9 / 5.6 (GB200 forward / backward, cuDNN 9.22), 4.2 / 6.1
// (GB300), 4.1 / 6.1 (H200, cuDNN 9.19); their median 5.75. Checked on rows it was not fitted on,
// the windowed ones of the same benchmark, each predicted from the causal rate at its sequence
// length and the head-width scale (attention_head_width.hpp): 128-token windows, heads of 64,
// 4,096 tokens (results/gpt_oss), GB200 forward 0.192 ms against 0.210 measured, backward 0.509
// against 0.465, GB300 0.142 against 0.202 and 0.431 against 0.442; a 1,024-token window on H200
// (64 query and 8 key heads of 64), 0.359 against 0.358 and 0.998 against 1.042. The share of
// useful FLOPs alone (window_share) put them at 0.034 / 0.090 ms (GB200) and 0.257 / 0.713 (H200).
//
// FP8 attention (RunOptions::fp8_attention) skips no key tile in its backward: the same benchmark's
// FP8 and MXFP8 windowed backward grows as the square of the length (GB200 FP8: 0.467, 1.73, 6.18,
// 23.2, 90.3 ms from 2,048 to 32,768 tokens; GB300 likewise), where its forward, and the bf16
// backward, grow linearly. At 4,096 tokens that is 1.73 ms against 1.46 for the causal core at
// bf16's rate and heads of 64: a windowed layer's FP8 backward costs a causal one's. The FP8
// kernels' own speed (causal, 4,096 to 8,192 tokens: forward 1.2 to 1.56 times bf16's, backward
// 0.92 to 1.24 times, by device and recipe) is not modelled: the core's time is bf16's.
#pragma once

#include "estimators/model.hpp"

namespace meshfit {

// B: the query and key tile of the kernels above at heads up to 128 wide (cuDNN's and
// FlashAttention's 128 × 128 blocks on Hopper and Blackwell; FlexAttention's BLOCK_SIZE 128).
inline constexpr double kAttentionTile = 128;
// c: a query tile's fixed cost in key-tile iterations (fitted above).
inline constexpr double kQueryTileOverhead = 5.75;

// Key tiles a query tile visits on average over a sequence of `seq` tokens: causal, (n_q + 1)/2
// with n_q = s/B query tiles; with a window w, at most k = ⌈(w − 1)/B⌉ + 1 (a tile's first query
// sees back to w − 1 keys before it, its last to itself), the first k − 1 tiles fewer; chunked
// with chunks of c, causal inside each chunk.
double key_tiles_per_query_tile(double seq, double window, double chunk);

// The layers' mean of (n_l + c)/(n_causal + c): the time of their fused attention core over that of
// as many causal layers of the same tokens. 1 without windows or chunks.
double tiled_core_share(const Model& m, double seq);

}  // namespace meshfit
