// Megatron-Core's pipeline layout string (--pipeline-model-parallel-layout; Megatron-Bridge's
// pipeline_model_parallel_layout), read into meshfit's body layers per virtual stage
// (RunOptions::layers_per_vstage). megatron_args.cpp writes the same string for export.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace meshfit {

// The string as megatron/core/transformer/pipeline_parallel_layer_layout.py parses it
// (parse_str_to_list): commas dropped, each "(…)*n" unrolled (no nesting), then each "x*n", then
// one virtual stage per '|'-separated segment in virtual-stage order, of 'E' (the embedding), 't'
// (a decoder layer), 'm' (an MTP depth) and 'L' (the loss). meshfit's layout holds the embedding
// on the first virtual stage and the MTP depths with the loss on the last, so the string must too
// (Megatron's validate_layer_layout makes the embedding the first entry and the loss the last; an
// MTP depth on any other stage, its "standalone" MTP, is refused here).
struct PipelineLayoutText {
  std::vector<std::int64_t> layers_per_vstage;  // decoder layers ('t') per virtual stage
  std::int64_t mtp_depths = 0;                  // 'm' entries
  std::string error;                            // why the string is refused; empty when read
};
PipelineLayoutText parse_megatron_pipeline_layout(const std::string& text);

}  // namespace meshfit
