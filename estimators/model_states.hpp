// Weights, gradients and optimizer state of what a stage holds, sharded by TP, EP/ETP and ZeRO
// (docs/spec/memory-model.md §3.2, §4.9, §6).
#pragma once

#include <cstdint>

#include "estimators/model.hpp"
#include "estimators/parameter_counts.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// ZeRO divisors of §3.2 for the non-expert and shared parts (G) and routed experts (G_e).
struct ZeroDivisors {
  double P = 1, G = 1, OS = 1;      // Z_P, Z_G, Z_OS
  double Pe = 1, Ge = 1, OSe = 1;   // Z_P,e, Z_G,e, Z_OS,e
  Offload offload = Offload::none;  // where the sharded states live (the strategy's)
};
// `run`'s expert_shard_group, when set, is G_e.
ZeroDivisors zero_divisors(const Strategy& s, const Run& run);

// Parameters one rank holds of one layer (§4.9): ne = P_ne,split/tp + P_ne,repl, etc.
struct RankParams {
  double non_expert = 0;  // ne
  double shared = 0;      // sh
  double routed = 0;      // rt
  double gemm = 0;        // TP/EP-split GEMM weights (the FP8 cache of §6.2)
  double total() const { return non_expert + shared + routed; }
};
RankParams rank_params(const LayerParams& p, const Strategy& s);
// One body layer of kind `ffn` per rank, its K/V heads counted as §4.2 says: under GQA a rank
// holds at least one K/V head, so max(kv_heads, tp) are counted.
RankParams layer_rank_params(const Model& m, const Strategy& s, FfnKind ffn);

// The ends of the model per rank (§4.7, §4.8, §5.3): the vocabulary table (padded, split over
// tp), the embedding (its table and learned positions), the final norm (at the body rate, ruling
// 3) and an MTP depth's extra parameters (eh_proj, its norms).
struct EndParams {
  double table = 0;  // one vocabulary table, v_pad·h/tp
  RankParams embedding, vocab, final_norm, mtp_extra;
};
EndParams end_params(const Model& m, const Run& run, const Strategy& s);

// Bytes of the three model states (plus gathered parameters and the FP8 cache) for a set of
// per-rank parameters; `table` selects β_opt_table.
struct ModelStates {
  double weights = 0, grads = 0, optimizer = 0, gathered = 0, fp8_cache = 0;
  double optimizer_elements = 0;  // local optimizer-shard elements (§9.9, ruling 8)
  double unsharded_elements = 0;  // parameters of the stage as one rank computes their gradients
  double host = 0;                // bytes offloaded to host memory (not in total())
  ModelStates& operator+=(const ModelStates& o) {
    host += o.host;
    weights += o.weights;
    grads += o.grads;
    optimizer += o.optimizer;
    gathered += o.gathered;
    fp8_cache += o.fp8_cache;
    optimizer_elements += o.optimizer_elements;
    unsharded_elements += o.unsharded_elements;
    return *this;
  }
  void add(const ModelStates& o, double times) {  // += times·o: `times` layers of one kind
    host += times * o.host;
    weights += times * o.weights;
    grads += times * o.grads;
    optimizer += times * o.optimizer;
    gathered += times * o.gathered;
    fp8_cache += times * o.fp8_cache;
    optimizer_elements += times * o.optimizer_elements;
    unsharded_elements += times * o.unsharded_elements;
  }
  double total() const { return weights + grads + optimizer + gathered + fp8_cache; }
};
// `keep_gathered`: ZeRO-3 without resharding keeps every gathered parameter (§6.1). Offloaded
// states (z.offload) move from the device to `host` (memory-model.md §6.4).
ModelStates model_states(const RankParams& r, const ZeroDivisors& z, const Run& run, bool table, bool keep_gathered);
// Of `states.optimizer`, what the optimizer creates at its first step: all but the fp32 master
// copy (β_master per optimizer-shard element), which exists from the start.
double optimizer_moments(const ModelStates& states, const Run& run);

// Whether ZeRO-3 reshards after the forward, resolved from the framework profile (§2.4).
bool reshards_after_forward(const Run& run, const Strategy& s);
// Whether gradient reduction waits for the step's last micro-batch (ruling 10).
bool defers_grad_sync(const Run& run, const Strategy& s);
// Whether a step's backward starts with no gradient on the device (§11): the framework frees them
// before each step (FrameworkProfile::grads_freed_before_step), and no earlier micro-batch or pipeline
// stage of the step has made any.
bool grads_built_in_backward(const Run& run, const Strategy& s);
// Whether the schedule runs a chunk's backwards together, round by round: interleaved 1F1B over
// more than one chunk (PyTorch's schedules.py: rounds = max(1, m // pp), the last virtual
// stage's backwards first in each).
bool backwards_grouped_by_chunk(const Strategy& s);
// Whether a rank's chunks hold their deferred gradients one at a time: deferred (ruling 10), with
// the backwards grouped by chunk in a single round (m < 2·pp), so each chunk's last backward
// reduce-scatters and frees its gradients (stage.py backward_maybe_with_nosync) before the next
// chunk's first. In more rounds, or on one chunk, a stage's chunks hold theirs together.
bool defers_chunk_by_chunk(const Run& run, const Strategy& s);

}  // namespace meshfit
