#include "engine/census_config.hpp"

#include <cmath>
#include <limits>

#include "engine/input_error.hpp"

namespace meshfit {

namespace {

constexpr double kMax = std::numeric_limits<double>::max();

// Op names of §7.5 in the order of estimators/activation_census Op; unknown names count as other.
std::size_t op_index(const std::string& name) {
  static const char* const names[] = {"normOp",   "attMM",  "attBMM", "attUp", "softmax", "dropout",
                                      "headCast", "gather", "ffMM",   "ffAct", "linrec",  "other"};
  for (std::size_t i = 0; i < kMeasuredOps; ++i) {
    if (name == names[i]) return i;
  }
  return kMeasuredOps - 1;
}

std::array<double, kMeasuredOps> read_ops(const Fields& rec, const std::string& key, double& sum) {
  std::array<double, kMeasuredOps> ops{};
  const Fields map(rec.raw(key), rec.source(), rec.path(key));
  sum = 0;
  for (const auto& name : map.keys()) {
    const double v = *map.optional_number(name, 0, kMax);
    ops[op_index(name)] += v;
    sum += v;
  }
  return ops;
}

MeasuredCensus read_record(const Fields& rec, const std::string& kind, std::vector<std::string>& warnings) {
  rec.reject_unknown({"seq_length", "saved", "saved_tp", "working", "working_tp", "selective", "selective_tp",
                      "selective_attention_mm", "selective_ffn_mm", "ops", "ops_tp"});
  MeasuredCensus c;
  c.kind = kind;
  auto required = [&](const char* key) {
    if (!rec.has(key)) rec.fail(key, "missing; expected a number of bytes per token >= 0");
    return *rec.optional_number(key, 0, kMax);
  };
  if (!rec.has("seq_length")) rec.fail("seq_length", "missing; expected the tokens per CP rank it was measured at");
  const double seq = *rec.optional_number("seq_length", 0, kMax);
  if (seq <= 0) rec.fail("seq_length", "expected a positive number of tokens");
  c.seq_length = seq;
  c.saved = required("saved");
  c.saved_tp = required("saved_tp");
  c.working = required("working");
  c.working_tp = required("working_tp");
  // Optional pairs, each stated whole or not at all.
  auto pair = [&](const char* a, const char* b) {
    if (rec.has(a) != rec.has(b))
      rec.fail(rec.has(a) ? b : a, std::string("missing; '") + a + "' and '" + b + "' come together");
    return rec.has(a);
  };
  if (pair("selective", "selective_tp")) {
    c.has_selective = true;
    c.selective = required("selective");
    c.selective_tp = required("selective_tp");
  }
  if (pair("selective_attention_mm", "selective_ffn_mm")) {
    rec.optional_number("selective_attention_mm", 0, 1);  // shares of FLOPs: at most 1
    rec.optional_number("selective_ffn_mm", 0, 1);
  }
  if (pair("ops", "ops_tp")) {
    c.has_ops = true;
    double sum = 0, sum_tp = 0;
    c.ops = read_ops(rec, "ops", sum);
    c.ops_tp = read_ops(rec, "ops_tp", sum_tp);
    if (std::fabs(sum - c.saved) > 0.01 * c.saved || std::fabs(sum_tp - c.saved_tp) > 0.01 * c.saved_tp) {
      warnings.push_back(rec.source() + ": " + rec.path("ops") + ": the ops sum to " + std::to_string(sum) + " / " +
                         std::to_string(sum_tp) + ", more than 1% off saved / saved_tp");
    }
  }
  return c;
}

}  // namespace

std::vector<MeasuredCensus> read_census_map(const Fields& doc, std::vector<std::string>& warnings) {
  std::vector<MeasuredCensus> out;
  if (!doc.has("activations")) return out;
  const Fields map(doc.raw("activations"), doc.source(), "activations");
  for (const auto& kind : map.keys()) {
    if (kind != "gqa_dense" && kind != "gqa_moe" && kind != "mla_dense" && kind != "mla_moe" && kind != "output") {
      map.fail(kind, "unknown layer kind; expected gqa_dense, gqa_moe, mla_dense, mla_moe or output");
    }
    out.push_back(read_record(Fields(map.raw(kind), doc.source(), map.path(kind)), kind, warnings));
  }
  return out;
}

}  // namespace meshfit
