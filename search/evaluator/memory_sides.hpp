// The memory evaluator's two sides (memory_evaluator.hpp): the activation side, which no ZeRO
// setting changes (activation_side.cpp), and the (z, G) side with the totals (zero_side.cpp).
// Internal to the evaluator.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "estimators/rules_profile.hpp"
#include "search/evaluator/memory_evaluator.hpp"

namespace meshfit::evaluator_detail {

inline constexpr double kNone = -std::numeric_limits<double>::infinity();

// A Tr_layer candidate X − K_after of layer kind `k` at body index `at` (§9.1). Pg + Rg + Xsp,
// added later, depend only on the kind, and adding a constant keeps the order of floating-point
// values, so the kind's largest base gives its largest candidate. Strictly greater: on a tie the
// first the scan meets stands, as in the one-pass scan.
inline void offer(std::array<double, 2>& best, std::array<std::int64_t, 2>* at, std::array<std::int64_t, 2>* order,
                  std::size_t k, double base, std::int64_t layer, std::int64_t position) {
  if (base > best[k]) {
    best[k] = base;
    if (at) (*at)[k] = layer;
    if (order) (*order)[k] = position;
  }
}

// The evaluator's reuse (the memo, twin chunks, totals without stages) is written for the
// standard profile's variants (rules_profile.hpp); under another profile it walks and totals
// every strategy in full.
inline bool standard_profile(const RulesProfile& rules) { return &rules == &rules_profile(Rules::standard); }

// §9.8: DualPipeV's two chunks overlap, and the stage's transient reads each chunk's own.
inline bool dualpipev_overlap(const Strategy& s) { return s.schedule == Schedule::dualpipev && s.vpp == 2; }

// Everything of the estimate that neither z nor G changes (memory-model.md §7–§9); the in-flight
// counts per chunk only with `counts`. `walks` and `states` are the scratch's (their storage kept
// from estimate to estimate); `kinds` the layer kinds' table of the triple walked (null: none).
void activation_side(ActivationSide& side, std::vector<ChunkWalk>& walks, InterleavedStateTable& states,
                     const LayoutPlan& plan, KindTable* kinds, const Model& m, const Run& run, const Device& dev,
                     const Strategy& s, bool counts);

// The estimate from the activation side: per (z, G) the model states, the ZeRO/FSDP parts of the
// transients and the totals (§6, §9, §11). `statics` holds the (z, G) side's b-free parts, reused
// when its key and `context` match (context 0: always made again).
void finish(MemoryReport& report, std::vector<StageMemory>& spare, bool detail, const ActivationSide& side,
            StaticSide& statics, std::uint64_t context, const Model& m, const Run& run, const Device& dev,
            const Strategy& s, const PipelineLayout& layout, const LayoutPlan& plan, double headroom_bytes);

}  // namespace meshfit::evaluator_detail
