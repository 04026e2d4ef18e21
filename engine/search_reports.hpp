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

// A fitting pick whose peak is within this fraction of the budget is marked tight: the memory
// estimate's median absolute error on the measured runs of data/validation/measured-public.yaml
// (5.8%, README's figures), rounded up. A user's own margin: --tight-margin.
inline constexpr double kTightFraction = 0.06;

// What the writers print beside the result: the inputs, echoed, and the output's settings.
struct SearchReport {
  const Model& model;
  const Cluster& cluster;
  const Run& run;
  const SearchResult& result;
  double headroom_bytes = 0;
  double tight_fraction = kTightFraction;
  bool timings = false;                  // the seconds taken (which differ run to run) in stdout's output
  bool wide = false;                     // a table column for every dimension, not only those that vary
  std::optional<double> train_tokens;    // --train-tokens: each row's time and GPU-hours to train on them
  std::optional<double> gpu_hour_price;  // --gpu-hour-price: and their cost
};

// What training on `train_tokens` takes at a row's throughput: days on the cluster, GPU-hours
// (devices × hours) and, with a price per GPU-hour, the cost. Nullopt without --train-tokens.
struct TrainingCost {
  double days = 0, gpu_hours = 0;
  std::optional<double> cost;
};
std::optional<TrainingCost> training_cost(const ScoredStrategy& x, const SearchReport& rep);
inline constexpr int kSearchSchemaVersion = 2;

// A row: the strategy (object and string), its figures, and whether it is tight (and, `top`, dominated).
void write_record_json(JsonWriter& j, const ScoredStrategy& x, const SearchReport& rep, double budget, bool top);
void write_search_json(const SearchReport& rep, std::ostream& out);
void write_search_csv(const SearchReport& rep, std::ostream& out);
void write_search_table(const SearchReport& rep, std::ostream& out);

// The searches of a --devices list, in the list's order (those searched; an interrupt stops it).
struct CountResults {
  std::vector<std::pair<std::int64_t, SearchResult>> results;
  std::vector<std::int64_t> counts;      // the list, in its order
  std::size_t listed = 0;                // device counts in the list
  std::optional<std::int64_t> smallest;  // the smallest searched count with a fitting strategy
  bool interrupted = false;
};
void write_counts_json(const CountResults& c, const SearchReport& settings, std::ostream& out);
// One row per device count searched; an interrupted list says so in a comment line first.
void write_counts_csv(const CountResults& c, const SearchReport& settings, std::ostream& out);
void write_counts_table(const CountResults& c, const SearchReport& settings, std::ostream& out);

}  // namespace meshfit
