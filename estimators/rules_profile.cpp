#include "estimators/rules_profile.hpp"

#include "estimators/activation_census.hpp"
#include "estimators/backward_transients.hpp"
#include "estimators/sapp_nd_rules.hpp"

namespace meshfit {

namespace {

Device own_overheads(Device d) { return d; }

// Immutable tables, one per --rules value.
constexpr RulesProfile kStandard{
    "default",
    gathered_kv_bytes,
    cp_buffer_transient,
    own_overheads,
    FullLayerKept::own_k1,
    LayerCounts::per_rank,
    InFlightCounts::schedule,
    LayerTransientRule::every_layer,
    false,
};
constexpr RulesProfile kSappNd{
    "sapp-nd",
    sapp_nd::gathered_kv,
    sapp_nd::cp_buffer,
    sapp_nd::overheads,
    FullLayerKept::whole_sequence_input,
    LayerCounts::seed_counts,
    InFlightCounts::seed_micro_factors,
    LayerTransientRule::stage_last_layer,
    true,
};

}  // namespace

const RulesProfile& rules_profile(Rules rules) { return rules == Rules::sapp_nd ? kSappNd : kStandard; }

}  // namespace meshfit
