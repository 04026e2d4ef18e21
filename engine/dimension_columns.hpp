// Which strategy dimensions a table of strategies gives a column (the search's tables, the HTML
// report's front table): the core ones always, the others where their value differs between rows.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/strategy_string.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// Indices into strategy_dims(): dp, tp, pp, mbs and m always, and every other dimension whose
// value differs between the rows (all of them with `wide`). A dimension with one value on every
// row is said once above the table (`common`), unless that value is neutral.
struct DimColumns {
  std::vector<std::size_t> shown;
  std::string common;  // "cp=2, cp_algo=ring, ep=8"
};
DimColumns dim_columns(const std::vector<Strategy>& rows, bool wide);

// A column's heading: the strategy string's key, shortened where the key is much wider than its values.
std::string column_label(const std::string& key);

// A cell: the value, or "-" where it is neutral (beyond the core dimensions, without `wide`);
// a hybrid CP's Ulysses degree joins its cp_algo cell ("hybrid:2") unless cp_u has its own column.
std::string dimension_cell(const Strategy& s, const StrategyDim& d, bool wide);

}  // namespace meshfit
