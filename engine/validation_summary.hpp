// `meshfit validate`'s comparison of measured cases with their estimates, and what it derives:
// the summary (median and worst errors, ranking within a source), per-family groups, the
// residuals the uncertainty bands are made of, and the bands' held-out coverage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ranking_agreement.hpp"
#include "engine/uncertainty.hpp"
#include "engine/validation_cases.hpp"
#include "estimators/memory_report.hpp"

namespace meshfit {

struct Row {
  const ValidationCase* c;
  double estimate_gib;
  std::optional<double> error;  // estimate/measured − 1, for a case that measured memory
  std::int64_t stage;
  double tokens_per_sec;  // estimated throughput per device
  std::optional<double> tokens_error;
  // The measured throughput's hardware FLOP/s (the recomputed forward included) over the
  // device's peak, with the estimate's FLOP count per token (the estimate's utilisation scaled by
  // measured / estimated tokens): above 1, the case's stated shape, sequence, batch and recompute
  // cannot all hold.
  std::optional<double> measured_hfu;
  // A throughput the case's own shape cannot reach: the measurement is not of the stated shape, so
  // it judges no estimate (the throughput summary, the ranking and the bands leave it out; its row
  // still prints its error).
  bool implausible() const { return measured_hfu && *measured_hfu > hfu_bound; }
  // The utilisation the device's tensor cores allow against its bf16 peak: 1, or 2 for a run with
  // FP8 linears (dense FP8 runs at twice the bf16 rate on every device that has it: H100/H200
  // 1979 vs 989 TFLOP/s, B200, MI300X 2615 vs 1307, per the vendors' datasheets).
  double hfu_bound = 1;
  // The throughput error the summary judges: none for a case without one or an implausible one.
  std::optional<double> judged_tokens_error() const { return implausible() ? std::nullopt : tokens_error; }
  // Whether the estimate fits the case's device (MemoryReport::fits, the search's own test). Every
  // case is a run that trained, so false is the worst error a planner can make: it would reject a
  // recipe known to work.
  bool fits = true;
};

// The estimate comparable with the case's metric: allocated with allocated, reserved with
// reserved, an unstated metric as the framework reports memory (ValidationCase::compared); the
// largest over stages, as the sources report the busiest rank.
Row compare_case(const ValidationCase& c);
// One stage's bytes comparable with the case's measurement: its metric, at the first iteration's
// peak for a case read after it (ValidationCase::first_iteration).
double compared_bytes(const ValidationCase& c, const StageMemory& st, const MemoryReport& r);

double median(std::vector<double> v);

// The median absolute memory error and the worst under- and over-estimates of a set of rows.
struct MemoryErrors {
  std::vector<double> abs_errors;
  const Row* under = nullptr;
  const Row* over = nullptr;
  double med = 0;  // set once every row is added
  void add(const Row& r);
};

// The comparison of every case, and its summary: the median absolute error and the worst
// under- and over-estimates, for memory and for throughput.
struct Summary {
  std::vector<Row> rows;
  // Every case that measured memory, and those of high or medium confidence: the set the
  // targets and the gates judge.
  MemoryErrors memory, confident;
  std::vector<double> tokens_abs;  // of the cases whose measured throughput is judged
  const Row* tok_under = nullptr;
  const Row* tok_over = nullptr;
  double tokens_med = 0;
  std::int64_t within = 0;                    // memory cases within 10%
  std::vector<const Row*> not_fitting;        // runs that trained, estimated not to fit
  std::vector<const Row*> implausible;        // measured throughput above the device's peak
  RankingAgreement memory_rank, tokens_rank;  // within each source
};

// `s` is not copied or moved after this: its worst-case pointers point into its rows.
void summarize(const std::vector<ValidationCase>& cases, Summary& s);

// --group-by: per family (framework, device, model or source), the cases and the median
// absolute errors of memory and throughput.
struct Group {
  std::string key;
  std::int64_t cases = 0;
  std::vector<double> memory, throughput;  // absolute errors
};
std::vector<Group> groups_of(const Summary& s, const std::string& by);

// Each case's measured / estimate, memory and step time, for data/uncertainty/residuals.yaml. A
// throughput the case's own shape cannot reach (implied hardware FLOP utilisation above 1) gives no step-time residual.
// Low-confidence measurements count: runs to come carry uncertain settings too.
std::vector<Residual> residuals_of(const Summary& s);

// How many measurements fall inside their band (p10–p90, which should hold about 80%), each band
// made without the case's own source (leave one source out): the held-out check of the bands.
struct Coverage {
  std::int64_t memory_in = 0, memory_cases = 0, time_in = 0, time_cases = 0;
};
Coverage held_out_coverage(const Summary& s);
// How many of `cases` fall inside the band their family draws from `pool`, borrowed bands widened
// by the pool's own borrowed_widening: with the bundled residuals as the pool, the bands that
// estimate, search and check print, judged on these cases (in-sample for the cases the pool holds).
Coverage band_coverage(const std::vector<Residual>& cases, const std::vector<Residual>& pool);

}  // namespace meshfit
