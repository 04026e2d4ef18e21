// Builds (model, run, cluster, strategy) the way `meshfit estimate` does, for the worked examples.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "engine/device_config.hpp"
#include "engine/model_config.hpp"
#include "engine/run_config.hpp"
#include "engine/strategy_string.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "estimators/strategy_rules.hpp"
#include <map>

namespace meshfit::test {

struct Case {
  Model model;
  Run run;
  Cluster cluster;
  Strategy strategy;
};

inline Case make_case(const std::string& model, std::int64_t devices, std::int64_t seq, std::int64_t gb,
                      const std::string& strategy, const std::string& framework = "megatron",
                      const std::string& device = "h100-80gb") {
  Case c{load_model(model), {}, make_cluster(device, devices), {}};
  RunFlags f;
  f.seq = seq;
  f.global_batch = gb;
  f.framework = framework;
  c.run = make_run(f, true);
  resolve_device_facts(c.run, c.cluster.device);
  std::vector<std::string> warnings;
  c.strategy = parse_strategy(strategy, c.model, c.run, c.cluster, warnings);
  return c;
}

inline MemoryReport estimate(const Case& c) { return estimate_memory(c.model, c.run, c.cluster, c.strategy); }

// memory-model.md §0.3: |actual − expected| ≤ max(1 byte, 1e−9 × expected).
inline bool near(double actual, double expected) {
  return std::fabs(actual - expected) <= std::max(1.0, 1e-9 * std::fabs(expected));
}

}  // namespace meshfit::test

#define CHECK_BYTES(actual, expected)                                                       \
  CHECK_MESSAGE(::meshfit::test::near((actual), (expected)), static_cast<long long>(actual) \
                                                                 << " vs " << static_cast<long long>(expected))
