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
// A strategy's dimensions in cli.md's key order, each with its value as the strategy string
// writes it and whether it is neutral: the value parse_strategy gives the key when it is left out
// (ep=1 on a dense model, vpp=1, the schedule the chunks imply, zero=0, the default shard group).
struct StrategyDim {
  const char* key;
  std::string value;
  bool neutral;
};
std::vector<StrategyDim> strategy_dims(const Strategy& s);
// The strategy string without its neutral values ("dp=8,tp=8,pp=2,mbs=1,m=32"): parse_strategy
// reads it back to the same strategy. dp, tp, pp, mbs and m are always written.
std::string strategy_to_string(const Strategy& s);
// Every key, neutral or not (--wide).
std::string full_strategy_string(const Strategy& s);

}  // namespace meshfit
