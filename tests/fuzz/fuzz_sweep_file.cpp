// libFuzzer target: a `meshfit sweep` file, read and expanded into its points (every mistake an
// InputError naming the file and field).
#include "engine/input_error.hpp"
#include "engine/sweep_file.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)meshfit::read_sweep(meshfit::fuzz::input_file(data, size, ".yaml"));
  } catch (const meshfit::InputError&) {
  }
  return 0;
}
