// libFuzzer target: SAPP-ND's MindFormers or HyperParallel YAML read into meshfit's inputs.
#include "engine/input_error.hpp"
#include "engine/sapp_nd_config.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)meshfit::read_sapp_nd_config(meshfit::fuzz::input_file(data, size, ".yaml"));
  } catch (const meshfit::InputError&) {
  }
  return 0;
}
