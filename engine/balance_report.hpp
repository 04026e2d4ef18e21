// `estimate --balance`: the balanced pipeline layout of a strategy (search/pipeline_balancer)
// beside its even split, as a table or a JSON field, with the run options that reproduce it.
#pragma once

#include <ostream>

#include "engine/json_writer.hpp"
#include "search/pipeline_balancer.hpp"

namespace meshfit {

void write_balance_table(const BalancedLayout& now, const std::optional<BalancedLayout>& balanced, double slack,
                         std::ostream& out);
void write_balance_json(JsonWriter& j, const BalancedLayout& now, const std::optional<BalancedLayout>& balanced,
                        double slack);

}  // namespace meshfit
