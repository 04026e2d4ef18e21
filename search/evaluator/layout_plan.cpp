#include "search/evaluator/layout_plan.hpp"

#include <algorithm>

namespace meshfit {

namespace {

// The stages' chunks as runs of one layer kind, with the model-state parts each stage holds.
void plan_runs(LayoutPlan& out, const Model& m, const PipelineLayout& layout, std::int64_t pp, std::int64_t vpp,
               bool full_recompute) {
  out.pp = pp;
  out.vpp = vpp;
  out.layer_ffn = m.layer_ffn;
  out.tie = m.tie;
  out.mtp_depths = m.mtp_depths;
  out.runs.clear();
  out.chunks.clear();
  out.stages.assign(static_cast<std::size_t>(pp), PlannedStage{});
  out.parts.clear();
  const auto nv = static_cast<std::int64_t>(layout.vstages.size());
  const bool split_ends = layout.vstages.front().stage != layout.head_stage;
  out.split_ends = split_ends;
  const FfnKind mtp_ffn = m.layer_ffn.empty() ? FfnKind::dense : m.layer_ffn.back();
  const std::uint8_t mtp_kind = mtp_ffn == FfnKind::moe ? 1 : 0;
  for (std::int64_t i = 0; i < pp; ++i) {
    PlannedStage& ps = out.stages[static_cast<std::size_t>(i)];
    ps.parts_begin = static_cast<std::uint32_t>(out.parts.size());
    for (std::int64_t c = 0; c < vpp; ++c) {
      const std::int64_t u = layout.vstage_of(i, c);
      const VirtualStage& vs = layout.vstages[static_cast<std::size_t>(u)];
      PlannedChunk pc;
      pc.vstage = u;
      pc.begin = static_cast<std::uint32_t>(out.runs.size());
      pc.parts_begin = static_cast<std::uint32_t>(out.parts.size());
      // Runs of one kind; under full recompute none crosses the end of the fully recomputed layers.
      for (std::int64_t l = 0; l < vs.layers;) {
        const FfnKind ffn = m.layer_ffn[static_cast<std::size_t>(vs.first_layer + l)];
        const bool full = full_recompute && l < vs.full_recompute;
        const std::int64_t end = full ? vs.full_recompute : vs.layers;
        std::int64_t e = l + 1;
        while (e < end && m.layer_ffn[static_cast<std::size_t>(vs.first_layer + e)] == ffn) ++e;
        PlannedRun r;
        r.first = vs.first_layer + l;
        r.count = e - l;
        r.kind = ffn == FfnKind::moe ? 1 : 0;
        r.full = full;
        out.runs.push_back(r);
        out.parts.emplace_back(r.kind == 1 ? StatePart::moe_layer : StatePart::dense_layer,
                               static_cast<double>(r.count));
        ps.has_moe = ps.has_moe || r.kind == 1;
        ps.kind_present[r.kind] = true;
        ps.body_layers[r.kind][r.full ? 1 : 0] += r.count;
        ps.last_layer_kind = r.kind;
        l = e;
      }
      pc.end = static_cast<std::uint32_t>(out.runs.size());
      ps.layers += vs.layers;
      ps.full_recompute += vs.full_recompute;
      if (u == 0) {
        ps.embedding = true;
        out.parts.emplace_back(StatePart::embedding, 1.0);
      }
      if (u == nv - 1) {
        ps.head = true;
        if (!m.tie) out.parts.emplace_back(StatePart::vocab, 1.0);
        if ((m.tie || m.mtp_depths > 0) && split_ends) out.parts.emplace_back(StatePart::vocab, 1.0);
        out.parts.emplace_back(StatePart::final_norm, 1.0);
        for (std::int64_t d = 0; d < m.mtp_depths; ++d) {
          out.parts.emplace_back(mtp_kind == 1 ? StatePart::moe_layer : StatePart::dense_layer, 1.0);
          out.parts.emplace_back(StatePart::mtp_extra, 1.0);
          ps.has_moe = ps.has_moe || mtp_kind == 1;
          ps.kind_present[mtp_kind] = true;
        }
        ps.mtp_depths = m.mtp_depths;
      }
      pc.parts_end = static_cast<std::uint32_t>(out.parts.size());
      out.chunks.push_back(pc);
    }
    ps.parts_end = static_cast<std::uint32_t>(out.parts.size());
  }
}

// Stage twins: a stage with no end of the model whose layers and parts repeat an earlier one's.
void find_stage_twins(LayoutPlan& out) {
  // Stage twins: each stage without an end of the model against the earlier ones.
  for (std::size_t i = 0; i < out.stages.size(); ++i) {
    PlannedStage& ps = out.stages[i];
    if (ps.embedding || ps.head) continue;
    for (std::size_t j = 0; j < i; ++j) {
      const PlannedStage& q = out.stages[j];
      if (q.embedding || q.head || q.twin != PlannedStage::kNoTwin) continue;
      if (q.kind_present != ps.kind_present || q.has_moe != ps.has_moe || q.last_layer_kind != ps.last_layer_kind ||
          q.body_layers != ps.body_layers || q.parts_end - q.parts_begin != ps.parts_end - ps.parts_begin ||
          !std::equal(out.parts.begin() + q.parts_begin, out.parts.begin() + q.parts_end,
                      out.parts.begin() + ps.parts_begin)) {
        continue;
      }
      ps.twin = static_cast<std::uint32_t>(j);
      break;
    }
  }
}

// Chunk twins: a chunk with no end of the model whose runs repeat the first chunk of their signature.
void find_chunk_twins(LayoutPlan& out, std::int64_t nv, bool find_twins) {
  // Twins: each chunk not at an end of the model against the first chunk of each run signature.
  auto same_runs = [&](const PlannedChunk& a, const PlannedChunk& b) {
    if (a.end - a.begin != b.end - b.begin) return false;
    for (std::uint32_t k = 0; k < a.end - a.begin; ++k) {
      const PlannedRun& x = out.runs[a.begin + k];
      const PlannedRun& y = out.runs[b.begin + k];
      if (x.count != y.count || x.kind != y.kind || x.full != y.full) return false;
    }
    return true;
  };
  std::vector<std::uint32_t>& firsts = out.signature_firsts;  // the first chunk of each signature met
  firsts.clear();
  for (std::uint32_t k = 0; k < out.chunks.size(); ++k) {
    PlannedChunk& pc = out.chunks[k];
    if (!find_twins || pc.vstage == 0 || pc.vstage == nv - 1 || pc.begin == pc.end) continue;
    for (const std::uint32_t f : firsts) {
      if (same_runs(out.chunks[f], pc)) {
        pc.twin = f;
        out.chunks[f].walked = true;
        break;
      }
    }
    if (pc.twin == PlannedChunk::kNoTwin) firsts.push_back(k);
  }
}

// Per stage: each chunk's first candidate position, and the chunks walked or repeated.
void place_chunks(LayoutPlan& out, const Model& m, std::int64_t nv, std::int64_t vpp) {
  // Per stage: each chunk's first candidate position, and whether its runs repeat an earlier chunk's.
  out.walk_chunks.clear();
  out.repeat_chunks.clear();
  for (std::size_t i = 0; i < out.stages.size(); ++i) {
    PlannedStage& ps = out.stages[i];
    ps.walk_begin = static_cast<std::uint32_t>(out.walk_chunks.size());
    ps.repeat_begin = static_cast<std::uint32_t>(out.repeat_chunks.size());
    std::uint32_t position = 0;
    for (std::size_t c = 0; c < static_cast<std::size_t>(vpp); ++c) {
      PlannedChunk& pc = out.chunks[i * static_cast<std::size_t>(vpp) + c];
      pc.position = position;
      position += pc.end - pc.begin;
      if (pc.vstage == nv - 1) position += static_cast<std::uint32_t>(m.mtp_depths);
      for (std::size_t e = 0; e < c && !pc.repeat && pc.twin != PlannedChunk::kNoTwin; ++e) {
        const PlannedChunk& earlier = out.chunks[i * static_cast<std::size_t>(vpp) + e];
        const std::uint32_t earlier_index = static_cast<std::uint32_t>(i * static_cast<std::size_t>(vpp) + e);
        pc.repeat = earlier.twin == pc.twin || earlier_index == pc.twin;
      }
      if (pc.repeat) {
        out.repeat_chunks.emplace_back(static_cast<std::uint32_t>(c), pc.twin);
      } else {
        out.walk_chunks.push_back(static_cast<std::uint32_t>(c));
      }
    }
    ps.walk_end = static_cast<std::uint32_t>(out.walk_chunks.size());
    ps.repeat_end = static_cast<std::uint32_t>(out.repeat_chunks.size());
  }
}

}  // namespace

void make_layout_plan(LayoutPlan& out, const Model& m, const PipelineLayout& layout, std::int64_t pp, std::int64_t vpp,
                      bool full_recompute, bool find_twins) {
  plan_runs(out, m, layout, pp, vpp, full_recompute);
  const auto nv = static_cast<std::int64_t>(layout.vstages.size());
  if (find_twins) find_stage_twins(out);
  find_chunk_twins(out, nv, find_twins);
  place_chunks(out, m, nv, vpp);
}

}  // namespace meshfit
