// Model input: a Hugging Face config.json, a meshfit model YAML (the same field names, plus an
// optional `model:` block of symbols that overrides them), or a bundled preset
// (docs/spec/memory-model.md §2.1).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/input_error.hpp"

#include "estimators/model.hpp"

namespace meshfit {

// The model_type values read natively.
const std::vector<std::string>& known_model_types();

// Builds a validated Model from a parsed config; `source` names the file in error messages.
Model model_from_config(const YAML::Node& doc, const std::string& source, const std::string& name);

// `spec` is a preset name (case-insensitive), a path to a config file, or a directory holding a
// config.json. Throws InputError on anything wrong.
Model load_model(const std::string& spec, const InputOrigin& origin = {});

}  // namespace meshfit
