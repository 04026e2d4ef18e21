// libFuzzer target: a HyperParallel / SAPP-ND train YAML read back as a strategy string.
#include "engine/hyperparallel_yaml.hpp"
#include "engine/input_error.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)meshfit::strategy_string_from_train_yaml(meshfit::fuzz::input_file(data, size, ".yaml"));
  } catch (const meshfit::InputError&) {
  }
  return 0;
}
