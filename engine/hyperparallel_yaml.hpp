// Reading back the HyperParallel / SAPP-ND train YAML that `meshfit export --to hyperparallel`
// writes (the writer is declared in engine/trainer_export.hpp).
#pragma once

#include <string>

namespace meshfit {

// The strategy string (cli.md's key=value form) the file's parallel_config, parallel optimizer,
// interleave, batch and recompute settings describe. Throws InputError naming the file and field.
std::string strategy_string_from_train_yaml(const std::string& path);

}  // namespace meshfit
