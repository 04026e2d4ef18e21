// One parallel strategy: the JSON strategy object of docs/spec/cli.md with the symbols of
// symbols.md §2. Plain data; engine/strategy_string parses it, estimators/strategy_rules checks it.
#pragma once

#include <cstdint>

namespace meshfit {

// Listed in the canonical order of search-and-time.md §2.6.
enum class Schedule : std::uint8_t { none, one_f_one_b, interleaved_1f1b, gpipe, zb_h1, dualpipev };
enum class CpAlgo : std::uint8_t { none, ring, ulysses, hybrid, allgather };
enum class Recompute : std::uint8_t { none, selective, full };
// Model states kept in host memory (issue 23): none; the optimizer (fp32 master and moments, with
// the fp32 gradients it steps on: ZeRO-Offload, Megatron's --optimizer-cpu-offload); or every
// sharded state, parameters and gradients too (FSDP2's CPUOffloadPolicy, ZeRO-3's offload_param).
enum class Offload : std::uint8_t { none, optimizer, params };

// A field added here must join same_node below, or be one of those it leaves out.
struct Strategy {
  std::int64_t dp = 1;
  std::int64_t tp = 1;
  bool sp = false;
  // TP collectives decomposed and pipelined with their GEMMs (search-and-time.md §7.5, memory-model.md
  // §11): Megatron's --tp-comm-overlap (Transformer Engine's userbuffers), torchtitan's AsyncTP.
  bool tp_comm_overlap = false;
  std::int64_t pp = 1;
  std::int64_t vpp = 1;  // v, model chunks per pipeline rank
  Schedule schedule = Schedule::none;
  std::int64_t cp = 1;
  CpAlgo cp_algo = CpAlgo::none;
  std::int64_t cp_u = 1;  // Ulysses degree inside CP
  std::int64_t ep = 1;
  std::int64_t etp = 1;
  int zero = 0;                  // z
  std::int64_t shard_group = 1;  // G, CP ranks included
  Offload offload = Offload::none;
  Recompute recompute = Recompute::none;
  std::int64_t recompute_layers = 0;  // n_rc per stage; 0 = every layer (with full)
  std::int64_t micro_batch = 1;       // b
  std::int64_t num_microbatches = 1;  // m

  std::int64_t world() const { return dp * tp * pp * cp; }   // N
  std::int64_t stage_ranks() const { return dp * cp * tp; }  // R
  std::int64_t sigma() const { return sp && tp > 1 ? tp : 1; }
  std::int64_t virtual_stages() const { return pp * vpp; }               // nv
  std::int64_t cp_ring() const { return cp / cp_u; }                     // cp_r
  std::int64_t expert_dp() const { return stage_ranks() / (ep * etp); }  // edp
  bool operator==(const Strategy&) const = default;
};

// Equal in everything but the ZeRO setting (z, G, offload), the recompute mode and n_rc, and the
// micro-batch size and count: what the search's memos and micro-batch runs are kept per. Field by
// field (no copies): it is on the scoring hot path.
inline bool same_node(const Strategy& a, const Strategy& b) {
  return a.dp == b.dp && a.tp == b.tp && a.sp == b.sp && a.tp_comm_overlap == b.tp_comm_overlap && a.pp == b.pp &&
         a.vpp == b.vpp && a.schedule == b.schedule && a.cp == b.cp && a.cp_algo == b.cp_algo && a.cp_u == b.cp_u &&
         a.ep == b.ep && a.etp == b.etp;
}

const char* to_string(Schedule s);
const char* to_string(CpAlgo a);
const char* to_string(Recompute r);
const char* to_string(Offload o);

}  // namespace meshfit
