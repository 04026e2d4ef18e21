#include "engine/validation_summary.hpp"

#include <algorithm>
#include <cmath>

#include "engine/memory_terms.hpp"
#include "estimators/overheads.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "search/evaluator/step_time_evaluator.hpp"

namespace meshfit {

double compared_bytes(const ValidationCase& c, const StageMemory& st, const MemoryReport& r) {
  if (!c.first_iteration) return c.compared == MemoryMetric::allocated ? st.allocated : st.reserved;
  // Read after the first iteration: its own peak, and what the allocator reserved for it.
  const double allocated = first_iteration_allocated(st);
  if (c.compared == MemoryMetric::allocated) return allocated;
  const double outside = st.device - st.reserved;
  return device_total(allocated, st.persistent(), outside, c.cluster.device, r.budget) - outside;
}

// The estimate comparable with the case's metric: allocated with allocated, reserved with
// reserved, an unstated metric as the framework reports memory (ValidationCase::compared); the
// largest over stages, as the sources report the busiest rank.
Row compare_case(const ValidationCase& c) {
  const MemoryReport r = estimate_memory(c.model, c.run, c.cluster, c.strategy);
  double best = -1;
  std::int64_t stage = 0;
  for (const auto& st : r.stages) {
    const double v = compared_bytes(c, st, r);
    if (v > best) {
      best = v;
      stage = st.stage;
    }
  }
  const double gib = best / kGiB;
  const TimeReport t = estimate_step_time(c.model, c.run, c.cluster, c.strategy);
  std::optional<double> tokens_error, measured_hfu;
  if (c.measured_tokens_per_sec && *c.measured_tokens_per_sec > 0) {
    tokens_error = t.tokens_per_sec_per_device / *c.measured_tokens_per_sec - 1;
    // The hardware also runs the recomputed forward (hardware FLOP utilisation, Korthikanti et
    // al. 2022 §5): the estimate's compute times, at one efficiency, stand for the FLOP ratio.
    const double model_compute = t.forward + t.backward;
    if (t.tokens_per_sec_per_device > 0 && model_compute > 0)
      measured_hfu = t.mfu * (model_compute + t.recompute) / model_compute * *c.measured_tokens_per_sec /
                     t.tokens_per_sec_per_device;
  }
  std::optional<double> error;
  if (c.measured_gib) error = gib / *c.measured_gib - 1;
  return {&c,
          gib,
          error,
          stage,
          t.tokens_per_sec_per_device,
          tokens_error,
          measured_hfu,
          c.run.options.fp8_linears ? 2.0 : 1.0,
          r.fits};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void MemoryErrors::add(const Row& r) {
  abs_errors.push_back(std::fabs(*r.error));
  if (!under || *r.error < *under->error) under = &r;
  if (!over || *r.error > *over->error) over = &r;
}

// `s` is not copied or moved after this: its worst-case pointers point into its rows.
void summarize(const std::vector<ValidationCase>& cases, Summary& s) {
  s.rows.reserve(cases.size());
  for (const auto& c : cases) s.rows.push_back(compare_case(c));
  for (const auto& r : s.rows) {
    if (!r.fits) s.not_fitting.push_back(&r);
    if (r.error) {
      s.memory.add(r);
      if (!r.c->low_confidence) s.confident.add(r);
    }
    if (r.implausible()) s.implausible.push_back(&r);
    if (const auto e = r.judged_tokens_error()) {
      s.tokens_abs.push_back(std::fabs(*e));
      if (!s.tok_under || *e < *s.tok_under->tokens_error) s.tok_under = &r;
      if (!s.tok_over || *e > *s.tok_over->tokens_error) s.tok_over = &r;
    }
  }
  s.memory.med = median(s.memory.abs_errors);
  s.confident.med = median(s.confident.abs_errors);
  s.tokens_med = median(s.tokens_abs);
  s.within = std::count_if(s.memory.abs_errors.begin(), s.memory.abs_errors.end(), [](double e) { return e <= 0.10; });
  std::vector<RankedRun> memory, tokens;
  for (const auto& r : s.rows) {
    if (r.c->measured_gib) memory.push_back({r.c->source, r.estimate_gib, *r.c->measured_gib});
    if (r.c->measured_tokens_per_sec && !r.implausible())
      tokens.push_back({r.c->source, r.tokens_per_sec, *r.c->measured_tokens_per_sec});
  }
  s.memory_rank = ranking_agreement(memory);
  s.tokens_rank = ranking_agreement(tokens);
}

std::vector<Group> groups_of(const Summary& s, const std::string& by) {
  std::vector<Group> out;
  for (const auto& r : s.rows) {
    const ValidationCase& c = *r.c;
    const std::string key = by == "framework" ? c.framework
                            : by == "device"  ? c.cluster.device.name
                            : by == "model"   ? c.model.name
                                              : c.source;
    auto it = std::find_if(out.begin(), out.end(), [&](const Group& g) { return g.key == key; });
    if (it == out.end()) it = out.insert(out.end(), Group{key, 0, {}, {}});
    ++it->cases;
    if (r.error) it->memory.push_back(std::fabs(*r.error));
    if (const auto e = r.judged_tokens_error()) it->throughput.push_back(std::fabs(*e));
  }
  std::sort(out.begin(), out.end(), [](const Group& a, const Group& b) { return a.key < b.key; });
  return out;
}

// Each case's measured / estimate, memory and step time, for data/uncertainty/residuals.yaml. A
// throughput the case's own shape cannot reach (implied hardware FLOP utilisation above 1) gives no step-time residual.
// Low-confidence measurements count: runs to come carry uncertain settings too.
std::vector<Residual> residuals_of(const Summary& s) {
  std::vector<Residual> out;
  for (const auto& r : s.rows) {
    const ValidationCase& c = *r.c;
    Residual x{c.id, family_of(c.model, c.run, c.cluster, c.strategy), std::nullopt, std::nullopt};
    if (c.measured_gib && r.estimate_gib > 0) x.memory = *c.measured_gib / r.estimate_gib;
    if (const auto e = r.judged_tokens_error()) x.step_time = 1 + *e;
    out.push_back(std::move(x));
  }
  return out;
}

Coverage band_coverage(const std::vector<Residual>& cases, const std::vector<Residual>& pool) {
  Coverage cov;
  // Each quantity's widening, only where some case measured it (each is a leave-one-family-out pass).
  auto widening = [&](Quantity q, bool measured) { return measured ? borrowed_widening(pool, q) : 1.0; };
  const double w_memory =
      widening(Quantity::memory,
               std::any_of(cases.begin(), cases.end(), [](const Residual& r) { return r.memory.has_value(); }));
  const double w_time =
      widening(Quantity::step_time,
               std::any_of(cases.begin(), cases.end(), [](const Residual& r) { return r.step_time.has_value(); }));
  auto inside = [&](const Residual& r, const std::optional<double>& ratio, Quantity q, double w, std::int64_t& in,
                    std::int64_t& n) {
    if (!ratio) return;
    const Band b = band_for(pool, r.family, q, w);
    if (b.cases == 0) return;  // the pool measured no such quantity: no band to hold it
    ++n;
    if (*ratio >= b.lo && *ratio <= b.hi) ++in;
  };
  for (const Residual& r : cases) {
    inside(r, r.memory, Quantity::memory, w_memory, cov.memory_in, cov.memory_cases);
    inside(r, r.step_time, Quantity::step_time, w_time, cov.time_in, cov.time_cases);
  }
  return cov;
}

Coverage held_out_coverage(const Summary& s) {
  const std::vector<Residual> all = residuals_of(s);
  std::vector<std::string> sources;
  for (const Row& r : s.rows) {
    if (std::find(sources.begin(), sources.end(), r.c->source) == sources.end()) sources.push_back(r.c->source);
  }
  // Each source's cases against the bands the other sources' residuals draw.
  Coverage cov;
  for (const std::string& source : sources) {
    std::vector<Residual> theirs, others;
    for (std::size_t k = 0; k < all.size(); ++k) (s.rows[k].c->source == source ? theirs : others).push_back(all[k]);
    const Coverage c = band_coverage(theirs, others);
    cov.memory_in += c.memory_in;
    cov.memory_cases += c.memory_cases;
    cov.time_in += c.time_in;
    cov.time_cases += c.time_cases;
  }
  return cov;
}

}  // namespace meshfit
