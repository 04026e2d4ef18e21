#include "engine/dimension_columns.hpp"

namespace meshfit {

namespace {

bool core_dim(const std::string& key) {
  return key == "dp" || key == "tp" || key == "pp" || key == "mbs" || key == "m";
}

std::string cell_of(const StrategyDim& d, bool wide) { return d.neutral && !wide && !core_dim(d.key) ? "-" : d.value; }

}  // namespace

std::string column_label(const std::string& key) {
  if (key == "shard_group") return "G";
  if (key == "recompute_layers") return "n_rc";
  return key;
}

std::string dimension_cell(const Strategy& s, const StrategyDim& d, bool wide) {
  std::string cell = cell_of(d, wide);
  if (!wide && std::string(d.key) == "cp_algo" && s.cp_algo == CpAlgo::hybrid) cell += ":" + std::to_string(s.cp_u);
  return cell;
}

DimColumns dim_columns(const std::vector<Strategy>& strategies, bool wide) {
  std::vector<std::vector<StrategyDim>> rows;
  rows.reserve(strategies.size());
  for (const auto& s : strategies) rows.push_back(strategy_dims(s));
  DimColumns c;
  const std::vector<StrategyDim> names = strategy_dims(Strategy{});
  for (std::size_t k = 0; k < names.size(); ++k) {
    const std::string key = names[k].key;
    if (key == "cp_u" && !wide) continue;  // in the cp_algo cell ("hybrid:2")
    bool varies = false, neutral = true;
    for (const auto& dims : rows) {
      varies = varies || cell_of(dims[k], wide) != cell_of(rows.front()[k], wide);
      neutral = neutral && dims[k].neutral;
    }
    if (wide || core_dim(key) || varies) {
      c.shown.push_back(k);
    } else if (!rows.empty() && !neutral) {
      c.common += (c.common.empty() ? "" : ", ") + key + "=" + rows.front()[k].value;
    }
  }
  return c;
}

}  // namespace meshfit
