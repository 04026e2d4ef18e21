// libFuzzer target: a device YAML (a preset and overrides).
#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)meshfit::make_cluster(meshfit::fuzz::input_file(data, size, ".yaml"), 64);
  } catch (const meshfit::InputError&) {
  }
  return 0;
}
