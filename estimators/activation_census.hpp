// The per-kind activation census (docs/spec/memory-model.md §7.1) and its analytic default
// (§7.4): bytes per token of a CP rank's share at micro-batch size 1, split into the part
// sequence parallelism shards (`saved`) and the part TP shards (`saved_tp`), by op.
#pragma once

#include <array>
#include <cstdint>

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// The op vocabulary of §7.5.
enum class Op : std::uint8_t {
  normOp,
  attMM,
  attBMM,
  attUp,
  softmax,
  dropout,
  headCast,
  gather,
  ffMM,
  ffAct,
  linrec,
  other
};
inline constexpr std::size_t kOpCount = 12;

struct Census {
  std::array<double, kOpCount> saved{};     // ÷ σ
  std::array<double, kOpCount> saved_tp{};  // ÷ tp
  double working = 0;                       // ÷ σ
  double working_tp = 0;                    // ÷ tp
  double w_att = 0;                         // attention backward workspace, TP-split (§7.4.1)
  double w_mlp = 0;                         // FFN backward workspace, TP-split
  // torchtitan per-op SAC (dense layers of the analytic census): kept bytes per token split into
  // the parts SP shards, TP shards, and neither (row-parallel matmul outputs before their
  // reduce-scatter). Negative sac_saved: not available.
  double sac_saved = -1, sac_saved_tp = 0, sac_unsplit = 0;
  // Of `saved`/`saved_tp`, by op: what a dense MLP keeps beyond its checkpointed input (the normed
  // input of its first matrices, their outputs, the second matrix's input), which Megatron's
  // `mlp` recompute module drops; and what routed experts' activation functions keep, which its
  // `moe_act` drops (RecomputeSwitches::dense_mlp, ::moe_act).
  std::array<double, kOpCount> mlp_saved{}, mlp_saved_tp{};
  double moe_act = 0, moe_act_tp = 0;
  // What a checkpointed core attention keeps beyond q, k and v, ÷ tp: the rest of the fused QKV
  // output its value view holds (FrameworkProfile::attention_checkpoint_keeps_qkv_output), kept
  // while selective recompute reruns core attention (the softmax switch off).
  double core_attn_checkpoint_tp = 0;

  double saved_total() const;
  double saved_tp_total() const;
  void add(Op op, bool tp_split, double bytes) { (tp_split ? saved_tp : saved)[static_cast<std::size_t>(op)] += bytes; }
  void add_mlp(Op op, bool tp_split, double bytes) {  // a dense MLP's own (see mlp_saved)
    add(op, tp_split, bytes);
    (tp_split ? mlp_saved_tp : mlp_saved)[static_cast<std::size_t>(op)] += bytes;
  }
};

// Whether a selective layer keeps the bytes of `op` under `sw` (§7.5): ops without a switch are
// always kept.
bool op_kept(Op op, const RecomputeSwitches& sw);

// Effective dropout switches: the run's, else the model config's.
bool attention_dropout(const Model& m, const Run& run);
bool hidden_dropout(const Model& m, const Run& run);
bool embedding_dropout(const Model& m, const Run& run);

// The Ulysses degree the census sees: cp for ulysses, cp_u for hybrid, 1 otherwise.
std::int64_t ulysses_degree(const Strategy& s);
// n'_kv = max(n_kv, tp·cp_u): K/V heads as the TP×Ulysses group holds them (§7.3, §7.4).
std::int64_t replicated_kv_heads(const Model& m, const Strategy& s);
// The K/V heads the attention kernel reads: n'_kv, or a where the model expands K and V to the
// query heads first (RunOptions::repeat_kv_heads).
std::int64_t attended_kv_heads(const Model& m, const Run& run, const Strategy& s);

// §7.4: the analytic census of a body layer with FFN flavour `ffn` under strategy `s`.
Census analytic_census(const Model& m, const Run& run, const Strategy& s, FfnKind ffn);

// §7.3: bytes per token of gathered keys and values a CP rank keeps (0 without CP or Ulysses).
double gathered_kv_bytes(const Model& m, const Run& run, const Strategy& s);

}  // namespace meshfit
