// A measured activation census (docs/spec/memory-model.md §7.1), as a model YAML's
// `activations:` map gives it per layer kind: bytes per token of a CP rank's share at
// micro-batch size 1. Plain data; engine/model_config reads and validates it.
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace meshfit {

inline constexpr std::size_t kMeasuredOps = 12;  // the op vocabulary of §7.5 (unknown names: other)

struct MeasuredCensus {
  std::string kind;  // gqa_dense, gqa_moe, mla_dense, mla_moe, or output
  double seq_length = 0;
  double saved = 0, saved_tp = 0, working = 0, working_tp = 0;
  bool has_selective = false;
  double selective = 0, selective_tp = 0;
  bool has_ops = false;
  std::array<double, kMeasuredOps> ops{}, ops_tp{};  // indexed like estimators/activation_census Op
};

}  // namespace meshfit
