#include "estimators/pipeline_stage_buffers.hpp"

#include "estimators/strategy_rules.hpp"

namespace meshfit {

bool holds_pipeline_stage_buffers(const Run& run, const Strategy& s) {
  if (s.pp < 2) return false;
  return run.options.pipeline_stage_buffers.value_or(run.profile.framework == Framework::torchtitan);
}

StageBoundary stage_boundary(const Model& m, const Run& run, const Strategy& s) {
  const RunOptions& o = run.options;
  const double n_cp = static_cast<double>(s.micro_batch * run.seq) / static_cast<double>(s.cp);
  const double v_pad = static_cast<double>(padded_vocab(m.vocab, run.profile.vocab_pad_multiple, s.tp));
  const double vocab = o.vocab_parallel_loss ? v_pad / static_cast<double>(s.tp) : v_pad;
  StageBoundary b;
  b.activation = n_cp * static_cast<double>(m.hidden) / static_cast<double>(s.sigma()) * o.beta_a;
  b.logits = n_cp * vocab * o.beta_a;
  return b;
}

double chunk_bytes_in_stage_buffers(const StageBoundary& b, const Run& run, std::int64_t vstage, std::int64_t vstages) {
  double held = vstage > 0 ? b.activation : 0;
  // A compiled loss keeps the logits themselves for its backward (layer_activations.cpp
  // output_kept): the tensor output_chunks holds, where the last stage keeps its outputs.
  const bool logits_kept = run.options.pipeline_outputs == PipelineOutputs::all;
  if (vstage == vstages - 1 && run.options.compiled_loss && logits_kept) held += b.logits;
  return held;
}

double pipeline_stage_buffer_bytes(const StageBoundary& b, const Run& run, const Strategy& s,
                                   const std::vector<std::int64_t>& vstages, std::int64_t nv) {
  const double m = static_cast<double>(s.num_microbatches);
  const PipelineOutputs kept = run.options.pipeline_outputs;
  double bytes = 0;
  for (const std::int64_t u : vstages) {
    if (u > 0) bytes += m * b.activation;  // input receive buffers
    if (u < nv - 1) {
      bytes += m * b.activation;                                     // output-gradient receive buffers
      if (kept != PipelineOutputs::none) bytes += m * b.activation;  // sent outputs
    } else if (kept == PipelineOutputs::all) {
      bytes += m * b.logits;
    }
  }
  return bytes;
}

}  // namespace meshfit
