// libFuzzer target: a `meshfit check` manifest, read into entries (an entry's own error is kept
// in the entry; only an unreadable manifest throws).
#include "engine/check_manifest.hpp"
#include "engine/input_error.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)meshfit::read_check_manifest(meshfit::fuzz::input_file(data, size, ".yaml"));
  } catch (const meshfit::InputError&) {
  }
  return 0;
}
