// What `meshfit search` writes (docs/spec/cli.md, "search"): the front, the fastest fitting
// strategies and the counts, as a table, JSON or CSV; and, for a list of device counts, the best
// strategy per count and the smallest count that fits.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <utility>
#include <vector>

#include "engine/json_writer.hpp"
#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "search/strategy_search.hpp"

namespace meshfit {

void write_record_json(JsonWriter& j, const ScoredStrategy& x);
void write_search_json(const SearchResult& r, std::ostream& out);
void write_search_csv(const SearchResult& r, std::ostream& out);
void write_search_table(const Model& m, const Cluster& c, const Run& run, const SearchResult& r, std::ostream& out);

// The searches of a --devices list, in the list's order (those searched; an interrupt stops it).
struct CountResults {
  std::vector<std::pair<std::int64_t, SearchResult>> results;
  std::size_t listed = 0;                // device counts in the list
  std::optional<std::int64_t> smallest;  // the smallest searched count with a fitting strategy
  bool interrupted = false;
};
void write_counts_json(const CountResults& c, std::ostream& out);
// One row per device count searched; an interrupted list says so in a comment line first.
void write_counts_csv(const CountResults& c, std::ostream& out);
void write_counts_table(const Model& model, const Cluster& cluster, const Run& run, const CountResults& c,
                        std::ostream& out);

}  // namespace meshfit
