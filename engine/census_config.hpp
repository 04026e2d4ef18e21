// Reads a model file's `activations:` map of measured censuses (docs/spec/memory-model.md §7.1).
#pragma once

#include <string>
#include <vector>

#include "engine/yaml_fields.hpp"
#include "estimators/measured_census.hpp"

namespace meshfit {

// `doc` is the model document; every malformed record is an InputError naming the field.
// Non-fatal findings (ops that do not sum to their totals) go to `warnings`.
std::vector<MeasuredCensus> read_census_map(const Fields& doc, std::vector<std::string>& warnings);

}  // namespace meshfit
