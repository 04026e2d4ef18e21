// The strategy string of docs/spec/cli.md ("dp=8,tp=4,sp=true,...") -> a complete Strategy
// with every omitted value filled as symbols.md §2 says, checked against the hard rules.
#pragma once

#include <string>
#include <vector>

#include "engine/input_error.hpp"
#include "engine/json_writer.hpp"
#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// Throws InputError naming the key (or the broken rule). `warnings` receives canonicalisations
// (sp with tp = 1).
// With `check_rules` false the hard rules are left to the caller (`explain` reports them all).
Strategy parse_strategy(const std::string& text, const Model& model, const Run& run, const Cluster& cluster,
                        std::vector<std::string>& warnings, bool check_rules = true, const InputOrigin& origin = {});

// The strategy object of cli.md, in its key order (null where a value does not apply).
void write_strategy_json(JsonWriter& j, const Strategy& s);
// The canonical strategy string (every key, cli.md's order), parseable by parse_strategy.
std::string strategy_to_string(const Strategy& s);

}  // namespace meshfit
