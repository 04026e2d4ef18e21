// A run-options file (`--run-options FILE.yaml`): the run options of docs/spec/memory-model.md
// §2.4 and the layout options of §5.1, by their spec names, applied over the framework's defaults.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "estimators/run.hpp"

namespace meshfit {

// Applies every option the document states to `run`; unknown names and bad values are
// InputErrors naming the file and the field.
// `prefix`: the options' path inside the file when they are a part of it (a search file's run_options).
void apply_run_options(const YAML::Node& doc, const std::string& source, Run& run, const std::string& prefix = "");

// A recompute_switches value: a preset name (megatron_core_attn, hyperparallel, torchtitan_op)
// or a map of switches (unnamed switches default to 1).
void apply_recompute_switches(const YAML::Node& value, const std::string& source, const std::string& field, Run& run);

}  // namespace meshfit
