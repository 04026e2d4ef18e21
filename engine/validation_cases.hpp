// Measured validation cases (data/validation/README.md): each case read into the inputs the
// estimators take, with the defaults a null field falls back to noted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

enum class MemoryMetric { reserved, allocated, unstated };

struct ValidationCase {
  std::string id;
  std::string framework;
  Model model;
  Run run;
  Cluster cluster;
  Strategy strategy;
  MemoryMetric metric = MemoryMetric::unstated;
  double measured_gib = 0;
  std::optional<double> measured_tokens_per_sec;
  std::vector<std::string> defaults_taken;  // "null X -> Y" notes
};

// Reads every case of a file; a malformed field is an InputError naming the file, the case id
// and the field. A strategy that breaks a hard rule is an error too (naming the case).
std::vector<ValidationCase> load_validation_cases(const std::string& path);

const char* to_string(MemoryMetric m);

}  // namespace meshfit
