// SAPP-ND's own input files, read directly (issue 23): the MindFormers train YAML its memory
// estimator's fixtures are written in (memory_estimation/test_cases/*/default.yaml; SAPP-ND
// reads it with CostModelParserMindformers) and the HyperParallel YAML of its nd/yamls (model,
// data, train.accelerator). Either gives the model, the strategy, the sequence and batch, the
// precision, the per-stage layers and recompute counts and the device memory; meshfit turns them
// into its own inputs (cli.md, "--sapp-nd-config").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

namespace meshfit {

struct SappNdConfig {
  std::string source;                // the file
  std::string format;                // "mindformers" or "hyperparallel"
  YAML::Node model;                  // a Hugging Face style config for model_from_config
  std::string model_name;            // trainer.model_name / model.name
  std::optional<YAML::Node> device;  // from context.max_device_memory (an Ascend preset's figures)
  std::int64_t devices = 0;          // dp·tp·cp·pp
  std::int64_t seq = 0;
  std::int64_t global_batch = 0;
  std::string precision;      // meshfit's base preset; run_options overrides its bytes
  std::string strategy;       // cli.md's strategy string
  YAML::Node run_options;     // dtypes, MoE mode, clipping, flash attention
  YAML::Node layout_options;  // layers_per_vstage, full_layers_per_vstage (the file's pipeline only)
};

// Reads either format (told apart by parallel_config, or train.accelerator). Throws InputError
// naming the file, the field and what was expected.
SappNdConfig read_sapp_nd_config(const std::string& path);

}  // namespace meshfit
