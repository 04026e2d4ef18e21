// libFuzzer target: a --strategy string for a dense and a mixture-of-experts model, its hard
// rules checked and, when valid, its memory estimated.
#include <string>

#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "engine/model_config.hpp"
#include "engine/run_config.hpp"
#include "engine/strategy_string.hpp"
#include "search/evaluator/memory_evaluator.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace meshfit;
  static const Model dense = load_model("llama-3.1-8b");
  static const Model moe = load_model("mixtral-8x7b");
  static const Cluster cluster = make_cluster("h100-80gb", 64);
  static const Run run = [] {
    RunFlags flags;
    flags.seq = 4096;
    flags.global_batch = 64;
    return make_run(flags, true);
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.ends_with(".yaml") || text.ends_with(".yml")) return 0;  // a path: the train-YAML target's
  for (const Model* m : {&dense, &moe}) {
    try {
      std::vector<std::string> warnings;
      const Strategy s = parse_strategy(text, *m, run, cluster, warnings);
      (void)estimate_memory(*m, run, cluster, s, 0);
    } catch (const InputError&) {
    }
  }
  return 0;
}
