// How far an estimate may be from what a run measures (issue 20): every estimate carries a band
// taken from the validation residuals of its family — framework × dense/MoE × recompute × device
// generation — the 10th and 90th percentiles of measured/estimate over the bundled measured runs
// (data/validation/), as `meshfit validate --write-residuals` records them in
// data/uncertainty/residuals.yaml (compiled in; a test holds the file to what validate writes).
// A family with fewer than kMinFamilyCases cases borrows from the next coarser one: its
// framework × dense/MoE × recompute, framework × dense/MoE, framework, then every case. A
// borrowed band is a guess about a family nobody measured, so it is widened: its log-distances from
// the median × w, with w fitted on the residuals themselves by leaving each family out in turn
// (borrowed_widening).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/input_error.hpp"
#include "engine/json_writer.hpp"
#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

struct Family {
  std::string framework;  // megatron, torchtitan, deepspeed
  bool moe = false;
  std::string recompute;   // none, selective, full
  std::string generation;  // Device::generation
  bool operator==(const Family&) const = default;
};
Family family_of(const Model& m, const Run& run, const Cluster& c, const Strategy& s);
std::string describe(const Family& f);  // "megatron dense selective hopper"

// One measured run: measured / estimate for its peak memory and for its step time (estimated
// tokens/s over measured), where it measured them.
struct Residual {
  std::string id;
  Family family;
  std::optional<double> memory, step_time;
};

inline constexpr std::int64_t kMinFamilyCases = 8;

// A band of ratios measured/estimate: the estimate × lo .. × hi is the likely range (p10–p90),
// from `cases` residuals of the family `basis` names.
struct Band {
  double lo = 1, hi = 1;
  std::int64_t cases = 0;
  std::string basis;                // "18 torchtitan dense cases"
  std::vector<double> ratios;       // sorted
  double widening = 1;              // w: 1 for a family's own band
  double quantile(double q) const;  // Hyndman–Fan type 6 (at (n + 1)·q); 1 without cases
  // The likely ratio at q: median·(quantile(q)/median)^w. lo and hi are likely(0.1), likely(0.9).
  double likely(double q) const;
};

enum class Quantity : std::uint8_t { memory, step_time };
// The band of family `f`: its own residuals, or a coarser level's widened by `widening`.
Band band_for(const std::vector<Residual>& residuals, const Family& f, Quantity q, double widening = 1);

// w for borrowed bands: each case's band is drawn with its whole family left out (so borrowed, as
// for a family never measured), and w is the smallest of 1, 1.25, ..., 5 at which those bands hold
// kBorrowedCoverage of the cases (5 if none does; 1 without residuals). Leave-one-family-out
// cross-validation: the spread between families, which a family's own residuals cannot show.
inline constexpr double kBorrowedCoverage = 0.80;
double borrowed_widening(const std::vector<Residual>& residuals, Quantity q);

// The bands of one strategy's estimates, from the bundled residuals.
Band memory_band(const Model& m, const Run& run, const Cluster& c, const Strategy& s);
Band step_time_band(const Model& m, const Run& run, const Cluster& c, const Strategy& s);

// The bundled residuals (data/uncertainty/residuals.yaml), read once, and their borrowed_widening.
const std::vector<Residual>& bundled_residuals();
double bundled_widening(Quantity q);

// The residuals file as validate writes it, and its reader (an error names the field).
std::string residuals_yaml(const std::vector<Residual>& residuals, const std::vector<std::string>& sources);
std::vector<Residual> residuals_from_yaml(const std::string& text, const std::string& source);

// --fit-margin: "none" (the estimate must fit) or "pNN", 50 ≤ NN ≤ 99 (the NN-th percentile of
// the likely peak must): nullopt or NN/100; anything else an InputError naming the flag.
std::optional<double> parse_fit_margin(const std::optional<std::string>& text, const InputOrigin& origin = {});
// Sets run.options.fit_factor for each recompute mode from the memory band of the family the run
// falls in with that mode: the quantile's ratio, at least 1 (a margin never loosens the budget);
// 1 without a margin.
void apply_fit_margin(Run& run, const Model& m, const Cluster& c, std::optional<double> quantile);

// `key`: {"p10": value·lo, "p90": value·hi, "basis": "..."}.
void write_band_json(JsonWriter& j, const std::string& key, double value, const Band& b);

// "57.9 GiB (likely 55.1–63.0)" without the unit: the band's range of `value`, to `decimals`.
std::string likely_range(double value, const Band& b, int decimals);

}  // namespace meshfit
