// libFuzzer target: a search file (pins, policies, headroom, top, run options).
#include "engine/input_error.hpp"
#include "engine/run_config.hpp"
#include "engine/run_options_config.hpp"
#include "engine/search_file.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace meshfit;
  try {
    const std::string path = fuzz::input_file(data, size, ".yaml");
    const SearchFile f = load_search_file(path);
    if (f.run_options.IsMap()) {
      RunFlags flags;
      flags.seq = 1024;
      flags.global_batch = 8;
      Run run = make_run(flags, true);
      apply_run_options(f.run_options, path, run, "run_options");
    }
  } catch (const InputError&) {
  }
  return 0;
}
