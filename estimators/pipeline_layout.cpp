#include "estimators/pipeline_layout.hpp"

#include <algorithm>

namespace meshfit {

namespace {

// §5.1 rule 3 applied to `slots` over `parts`: ⌊slots/parts⌋ each, one more for each of the
// last (slots mod parts) — early virtual stages hold more micro-batches in flight.
std::int64_t spread(std::int64_t slots, std::int64_t parts, std::int64_t index) {
  const std::int64_t base = slots / parts, extra = slots % parts;
  return base + (index >= parts - extra ? 1 : 0);
}

// Slots of pipeline stage i under rule 2 (first/last stage counts), or -1 when not exact.
std::int64_t stage_slots(const Run& run, const Strategy& s, std::int64_t slots, std::int64_t i) {
  const std::int64_t first = run.options.layers_first_stage, last = run.options.layers_last_stage;
  if (s.pp == 1) return slots;
  if (first > 0 && i == 0) return first;
  if (last > 0 && i == s.pp - 1) return last;
  const std::int64_t fixed_stages = (first > 0 ? 1 : 0) + (last > 0 ? 1 : 0);
  const std::int64_t rest = slots - (first > 0 ? first : 0) - (last > 0 ? last : 0);
  const std::int64_t stages = s.pp - fixed_stages;
  if (stages <= 0) return rest == 0 ? 0 : -1;
  if (rest < 0 || rest % stages != 0) return -1;
  return rest / stages;
}

std::int64_t total_slots(const Model& m, const Run& run) {
  return m.layers + (run.options.account_embedding ? 1 : 0) + (run.options.account_loss ? 1 : 0);
}

bool uses_stage_counts(const Run& run) {
  return run.options.layers_first_stage > 0 || run.options.layers_last_stage > 0;
}

// Slots of virtual stage u.
std::int64_t vstage_slots(const Run& run, const Strategy& s, std::int64_t slots, std::int64_t u) {
  const std::int64_t nv = s.virtual_stages();
  if (!run.options.layers_per_vstage.empty()) {  // rule 1: the list as given
    return run.options.layers_per_vstage[static_cast<std::size_t>(u)];
  }
  if (!uses_stage_counts(run)) return spread(slots, nv, u);
  // Rule 2: the stage's slots spread over its chunks by rule 3. Interleaving maps chunk c of
  // stage i to u = c·pp + i; under dualpipev chunk 1 of stage i is u = 2pp − 1 − i.
  std::int64_t stage, chunk;
  if (s.schedule == Schedule::dualpipev) {
    stage = u < s.pp ? u : 2 * s.pp - 1 - u;
    chunk = u < s.pp ? 0 : 1;
  } else {
    stage = u % s.pp;
    chunk = u / s.pp;
  }
  return spread(stage_slots(run, s, slots, stage), s.vpp, chunk);
}

}  // namespace

std::int64_t PipelineLayout::stage_layers(std::int64_t stage) const {
  std::int64_t n = 0;
  for (const auto& v : vstages) n += v.stage == stage ? v.layers : 0;
  return n;
}

bool layout_counts_valid(const Model& m, const Run& run, const Strategy& s) {
  const std::int64_t slots = total_slots(m, run);
  const std::int64_t nv = s.virtual_stages();
  if (nv < 1 || nv > slots) return false;
  // A Megatron layout string places the model's own MTP depths, no more, no fewer.
  if (run.options.layout_mtp_depths >= 0 && run.options.layout_mtp_depths != m.mtp_depths) return false;
  // full_layers_per_vstage (§5.4): one count per virtual stage, none above its layers. Checked
  // whatever the recompute mode (no validity rule reads the mode), applied under full recompute.
  const auto& full = run.options.full_layers_per_vstage;
  if (!full.empty()) {
    if (static_cast<std::int64_t>(full.size()) != nv) return false;
    for (std::int64_t u = 0; u < nv; ++u) {
      std::int64_t body = vstage_slots(run, s, slots, u);
      if (u == 0 && run.options.account_embedding) --body;
      if (u == nv - 1 && run.options.account_loss) --body;
      if (full[static_cast<std::size_t>(u)] < 0 || full[static_cast<std::size_t>(u)] > body) return false;
    }
  }
  // Rule 3 alone gives every virtual stage at least one slot, so no body count is negative.
  if (run.options.layers_per_vstage.empty() && !uses_stage_counts(run)) return true;
  const auto& list = run.options.layers_per_vstage;
  if (!list.empty()) {
    std::int64_t sum = 0;
    for (std::int64_t n : list) {
      if (n < 0) return false;
      sum += n;
    }
    if (static_cast<std::int64_t>(list.size()) != nv || sum != slots) return false;
  } else if (uses_stage_counts(run)) {
    for (std::int64_t i = 0; i < s.pp; ++i) {
      const std::int64_t n = stage_slots(run, s, slots, i);
      if (n < s.vpp) return false;
    }
  }
  for (std::int64_t u = 0; u < nv; ++u) {
    std::int64_t body = vstage_slots(run, s, slots, u);
    if (u == 0 && run.options.account_embedding) --body;
    if (u == nv - 1 && run.options.account_loss) --body;
    if (body < 0) return false;
  }
  return true;
}

bool update_layout_key(LayoutKey& key, const Model& m, const Run& run, const Strategy& s, bool same_model_and_run) {
  const RunOptions& o = run.options;
  const bool full = s.recompute == Recompute::full;
  const std::int64_t n_rc = full ? s.recompute_layers : 0;
  if (same_model_and_run && key.layers >= 0) {  // only what the strategy sets can have changed
    if (key.pp == s.pp && key.vpp == s.vpp && key.recompute_layers == n_rc && key.full == full &&
        key.schedule == s.schedule) {
      return false;
    }
  } else if (key.layers == m.layers && key.first_stage == o.layers_first_stage &&
             key.last_stage == o.layers_last_stage && key.pp == s.pp && key.vpp == s.vpp &&
             key.recompute_layers == n_rc && key.account_embedding == o.account_embedding &&
             key.account_loss == o.account_loss && key.full == full && key.schedule == s.schedule &&
             key.per_vstage == o.layers_per_vstage && key.full_per_vstage == o.full_layers_per_vstage) {
    return false;
  }
  key.layers = m.layers;
  key.first_stage = o.layers_first_stage;
  key.last_stage = o.layers_last_stage;
  key.pp = s.pp;
  key.vpp = s.vpp;
  key.recompute_layers = n_rc;
  key.account_embedding = o.account_embedding;
  key.account_loss = o.account_loss;
  key.full = full;
  key.schedule = s.schedule;
  key.per_vstage = o.layers_per_vstage;
  key.full_per_vstage = o.full_layers_per_vstage;
  return true;
}

PipelineLayout make_layout(const Model& m, const Run& run, const Strategy& s) {
  PipelineLayout layout;
  make_layout_into(layout, m, run, s);
  return layout;
}

void make_layout_into(PipelineLayout& layout, const Model& m, const Run& run, const Strategy& s) {
  const std::int64_t nv = s.virtual_stages();
  const std::int64_t slots = total_slots(m, run);
  layout.vstages.assign(static_cast<std::size_t>(nv), VirtualStage{});
  layout.pp = s.pp;
  layout.dualpipev = s.schedule == Schedule::dualpipev;
  std::int64_t next = 0;
  for (std::int64_t u = 0; u < nv; ++u) {
    VirtualStage& v = layout.vstages[static_cast<std::size_t>(u)];
    std::int64_t body = vstage_slots(run, s, slots, u);
    if (u == 0 && run.options.account_embedding) --body;
    if (u == nv - 1 && run.options.account_loss) --body;
    v.first_layer = next;
    v.layers = std::max<std::int64_t>(0, body);
    next += v.layers;
    if (s.schedule == Schedule::dualpipev) {  // §5.2: the V shape
      v.stage = u < s.pp ? u : 2 * s.pp - 1 - u;
      v.chunk = u < s.pp ? 0 : 1;
    } else {
      v.stage = u % s.pp;
      v.chunk = u / s.pp;
    }
  }
  layout.head_stage = layout.vstages.back().stage;

  // §5.4: full recompute of n' = min(n_rc, layers of the stage) per stage, ⌊n'/v⌋ + [c < n' mod v]
  // in chunk c, capped at the chunk's layers; the first layers of each chunk.
  if (s.recompute == Recompute::full) {
    for (auto& v : layout.vstages) {
      if (!run.options.full_layers_per_vstage.empty()) {  // the run's own count per virtual stage
        v.full_recompute = std::min(
            v.layers, run.options.full_layers_per_vstage[static_cast<std::size_t>(&v - layout.vstages.data())]);
      } else if (s.recompute_layers == 0) {
        v.full_recompute = v.layers;
      } else {
        const std::int64_t stage_n = layout.stage_layers(v.stage);
        const std::int64_t n = std::min(s.recompute_layers, stage_n);
        const std::int64_t want = n / s.vpp + (v.chunk < n % s.vpp ? 1 : 0);
        v.full_recompute = std::min(want, v.layers);
      }
    }
  }
}

}  // namespace meshfit
