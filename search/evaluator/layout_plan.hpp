// A pipeline layout's body layers as the estimators walk them: per (stage, chunk) the runs of
// consecutive layers of one FFN kind (split where a chunk's fully recomputed layers end, under
// full recompute), and each stage's layout-only facts — the model-state parts in the order they
// are added (memory-model.md §6), which layer kinds it holds, its layer counts per (kind, fully
// recomputed) and its ends. None of it reads b, m, z, G or the kinds' figures, so it is made once
// per layout rather than once per estimate; the memory model's activation side walks its runs and
// the step-time model's compute side its counts.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "estimators/model.hpp"
#include "estimators/pipeline_layout.hpp"

namespace meshfit {

// The model-state additions of a stage (replayed per (z, G) in the same order).
enum class StatePart : std::uint8_t { dense_layer, moe_layer, embedding, vocab, final_norm, mtp_extra };

struct PlannedRun {
  std::int64_t first = 0, count = 0;  // body index of its first layer, layers in the run
  std::uint8_t kind = 0;              // 0 dense, 1 MoE
  bool full = false;                  // among its chunk's fully recomputed layers
};

struct PlannedChunk {
  static constexpr std::uint32_t kNoTwin = UINT32_MAX;
  std::int64_t vstage = 0;                       // u, the virtual stage held as this chunk
  std::uint32_t begin = 0, end = 0;              // its runs in LayoutPlan::runs, model order
  std::uint32_t parts_begin = 0, parts_end = 0;  // its model-state parts in LayoutPlan::parts
  // An earlier chunk (index in LayoutPlan::chunks) whose runs have the same counts, kinds and
  // recompute classes, neither holding an end of the model: its activations are the same
  // figures, so the activation side walks only the first of them. `walked`: one that others copy.
  std::uint32_t twin = kNoTwin;
  bool walked = false;
  // `repeat`: an earlier chunk of the same stage is the walked chunk or another of its twins, so
  // the stage has been offered these runs' transient candidates already. `position`: the place
  // of the chunk's first candidate in the stage's scan (its runs' and MTP depths' before it).
  bool repeat = false;
  std::uint32_t position = 0;
};

struct PlannedStage {
  std::uint32_t parts_begin = 0, parts_end = 0;  // in LayoutPlan::parts
  std::int64_t layers = 0, full_recompute = 0, mtp_depths = 0;
  bool embedding = false, head = false, has_moe = false;
  std::array<bool, 2> kind_present{};  // body or MTP layers of each kind (0 dense, 1 MoE)
  // Body layers by [kind][fully recomputed]: a stage's time adds each layer's, so the compute side
  // multiplies the kind's figures by these instead of walking the layers.
  std::array<std::array<std::int64_t, 2>, 2> body_layers{};
  int last_layer_kind = -1;  // its last body layer's kind, −1 with none
  // An earlier stage with the same model-state parts in the same order, the same kinds, the same
  // layer counts per (kind, fully recomputed) and no end of the model: the same model states,
  // FSDP holdings and communicators under any (z, G), and the same compute, which the estimators
  // copy rather than add up again.
  static constexpr std::uint32_t kNoTwin = UINT32_MAX;
  std::uint32_t twin = kNoTwin;
  // Its chunks (index c) in LayoutPlan::walk_chunks[walk_begin, walk_end): all but the repeats,
  // in order; and the repeats, as (c, twin) in LayoutPlan::repeat_chunks[repeat_begin, repeat_end).
  // Where no per-chunk figure is wanted a repeat only takes its twin's bytes, so the activation
  // side walks the first list and copies the second.
  std::uint32_t walk_begin = 0, walk_end = 0, repeat_begin = 0, repeat_end = 0;
};

struct LayoutPlan {
  std::int64_t pp = 0, vpp = 0;
  bool split_ends = false;  // the embedding and the head on different stages (§5.3)
  std::vector<PlannedRun> runs;
  std::vector<PlannedChunk> chunks;  // stage-major: chunks[i·vpp + c]
  std::vector<PlannedStage> stages;
  std::vector<std::pair<StatePart, double>> parts;                     // (part, times), stage after stage
  std::vector<std::uint32_t> walk_chunks;                              // per stage (PlannedStage::walk_begin)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> repeat_chunks;  // per stage (repeat_begin)
  std::vector<std::uint32_t> signature_firsts;                         // make_layout_plan's work space (storage kept)

  const PlannedChunk& chunk(std::int64_t stage, std::int64_t c) const {
    return chunks[static_cast<std::size_t>(stage * vpp + c)];
  }
  // What it read of the model besides the layout: a plan is made for the model whose layer kinds,
  // tied embedding and MTP depths these are (two models of one layout may differ there).
  std::vector<FfnKind> layer_ffn;
  bool tie = false;
  std::int64_t mtp_depths = -1;
  bool made_for(const Model& m) const { return m.mtp_depths == mtp_depths && m.tie == tie && m.layer_ffn == layer_ffn; }
};

// The plan of `layout` for `s`'s pp and vpp; `full_recompute` splits runs where each chunk's fully
// recomputed layers end. Without `find_twins` every chunk is walked (the tests' reference).
// Reuses `out`'s storage.
void make_layout_plan(LayoutPlan& out, const Model& model, const PipelineLayout& layout, std::int64_t pp,
                      std::int64_t vpp, bool full_recompute, bool find_twins = true);

}  // namespace meshfit
