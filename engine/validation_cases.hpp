// Measured validation cases (data/validation/README.md): each case read into the inputs the
// estimators take, with the defaults a null field falls back to noted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/input_error.hpp"
#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

enum class MemoryMetric { reserved, allocated, unstated };

struct ValidationCase {
  std::string id;
  std::string framework;
  std::string source;  // the case's `source`, its first word: the repository or publication
  Model model;
  Run run;
  Cluster cluster;
  Strategy strategy;
  MemoryMetric metric = MemoryMetric::unstated;
  // What the estimate is compared with: the case's metric, or where it is unstated the figure the
  // framework's own memory report leads with (Megatron: peak allocated; others: reserved).
  MemoryMetric compared = MemoryMetric::reserved;
  std::optional<double> measured_gib;  // null: a throughput-only case
  // The case's measured.confidence is `low`: reported, but outside the memory targets and gates
  // (issue 20 sets them for high- and medium-confidence measurements).
  bool low_confidence = false;
  // measured.first_iteration: the memory was read after the run's first iteration, before its
  // optimizer's first step had created its states (first_iteration_allocated, overheads.hpp).
  bool first_iteration = false;
  std::optional<double> measured_tokens_per_sec;
  std::vector<std::string> defaults_taken;  // "null X -> Y" notes
};

// A case that cannot be estimated: its source did not state a value the estimate needs and no
// framework default stands for (the sequence length), or a field meshfit cannot read (an unknown
// model type or device, a strategy that breaks a rule). Listed with its reason, never dropped;
// the file's other cases are estimated.
struct UnestimatedCase {
  std::string id;
  std::string field;   // the field not stated ("run.seq_len"), or empty
  std::string reason;  // the error, naming the file, the case and the field
};
// Thrown for such a case when the caller does not collect them.
class NotStated : public InputError {
 public:
  NotStated(const std::string& source, const std::string& field, const std::string& expected)
      : InputError(source, field, expected), field_(field) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// Reads every case of a file; a malformed field is an InputError naming the file, the case id
// and the field. A strategy that breaks a hard rule is an error too (naming the case). With
// `unestimated`, a case that cannot be estimated goes there with its reason instead of failing.
std::vector<ValidationCase> load_validation_cases(const std::string& path,
                                                  std::vector<UnestimatedCase>* unestimated = nullptr);

const char* to_string(MemoryMetric m);

// How a source counted the model FLOPs behind its TFLOP/s per GPU (the case's
// measured.flops_convention, data/validation/README.md): Megatron-LM's training.py today, the
// same file before 2025-03 (no causal halving of the score term), or Narayanan et al. 2021's
// eq. 3 (four passes, the recomputed forward included).
enum class FlopsConvention { megatron, megatron_pre_2025, megatron_2021_paper };
const char* to_string(FlopsConvention c);

// Model FLOPs per token under `convention` (engine/validation_cases.cpp says each source's
// formula), with the padded vocabulary v_pad; 0 for MLA models, which these formulas do not cover.
double megatron_reported_flops_per_token(const Model& m, double seq, double v_pad,
                                         FlopsConvention convention = FlopsConvention::megatron);

}  // namespace meshfit
