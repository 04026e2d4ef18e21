// SAPP-ND's attention activations (§17.5.3, SeedConvention::seed_attention): the bytes per token
// its EvalAttn formulas keep, as census entries in place of the analytic census's attention ops
// (its norms stay the census's).
#pragma once

#include "estimators/activation_census.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit::sapp_nd {

// Adds to `c` the kept bytes per token of a CP rank's share of one layer's attention block.
void add_attention(const Model& m, const Run& run, const Strategy& s, Census& c);

}  // namespace meshfit::sapp_nd
