#include "estimators/rules_profile.hpp"

#include "estimators/activation_census.hpp"
#include "estimators/backward_transients.hpp"
#include "estimators/sapp_nd_rules.hpp"

namespace meshfit {

namespace rules_detail {

// Immutable tables, one per --rules value.
const RulesProfile standard_rules{
    "default",
    gathered_kv_bytes,
    cp_buffer_transient,
    nullptr,
    FullLayerKept::own_k1,
    LayerCounts::per_rank,
    InFlightCounts::schedule,
    LayerTransientRule::every_layer,
    false,
};
const RulesProfile sapp_nd_rules{
    "sapp-nd",
    ::meshfit::sapp_nd::gathered_kv,
    ::meshfit::sapp_nd::cp_buffer,
    ::meshfit::sapp_nd::overheads,
    FullLayerKept::whole_sequence_input,
    LayerCounts::seed_counts,
    InFlightCounts::seed_micro_factors,
    LayerTransientRule::stage_last_layer,
    true,
};

}  // namespace rules_detail

}  // namespace meshfit
