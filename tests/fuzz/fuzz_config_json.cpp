// libFuzzer target: a Hugging Face config.json or meshfit model YAML, read and, when it loads,
// priced for one strategy (parameter counts and memory over whatever sizes passed the bounds).
#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "engine/model_config.hpp"
#include "engine/run_config.hpp"
#include "engine/strategy_string.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace meshfit;
  try {
    const Model m = load_model(fuzz::input_file(data, size, ".json"));
    static const Cluster cluster = make_cluster("h100-80gb", 8);
    RunFlags flags;
    flags.seq = 1024;
    flags.global_batch = 8;
    const Run run = make_run(flags, true);
    std::vector<std::string> warnings;
    const Strategy s = parse_strategy("zero=1", m, run, cluster, warnings);
    (void)estimate_memory(m, run, cluster, s, 0);
  } catch (const InputError&) {
  }
  return 0;
}
