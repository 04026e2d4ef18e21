#include "engine/check_runner.hpp"

#include <chrono>
#include <cmath>
#include <exception>

#include <tbb/parallel_for.h>

#include "engine/cli_options.hpp"
#include "engine/device_config.hpp"
#include "engine/uncertainty.hpp"
#include "engine/input_error.hpp"
#include "engine/memory_terms.hpp"
#include "engine/model_config.hpp"
#include "engine/strategy_string.hpp"
#include "engine/text_format.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "search/evaluator/step_time_evaluator.hpp"
#include "search/search_verifier.hpp"
#include "search/search_workspace.hpp"
#include "search/strategy_search.hpp"

namespace meshfit {

const char* to_string(CheckStatus s) {
  switch (s) {
    case CheckStatus::pass: return "pass";
    case CheckStatus::fail: return "fail";
    case CheckStatus::error: return "error";
  }
  return "error";
}

namespace {

std::string gib(double g) { return fixed(g, 2) + " GiB"; }

// Fills the memory figures of `s` into `r`; returns the report.
MemoryReport record_memory(const Model& m, const Run& run, const Cluster& c, const Strategy& s, double headroom,
                           CheckResult& r) {
  const MemoryReport mem = estimate_memory(m, run, c, s, headroom);
  r.peak_gib = mem.peak / kGiB;
  const Band band = memory_band(m, run, c, s);
  r.peak_likely_lo_gib = *r.peak_gib * band.lo;
  r.peak_likely_hi_gib = *r.peak_gib * band.hi;
  r.peak_stage = mem.peak_stage;
  r.terms_gib.clear();
  for (const auto& [name, bytes] : stage_terms(mem.stages[static_cast<std::size_t>(mem.peak_stage)])) {
    r.terms_gib.emplace_back(name, bytes / kGiB);
  }
  return mem;
}

void check_pinned(const CheckEntry& e, const Model& m, const Run& run, const Cluster& c, double headroom,
                  CheckResult& r) {
  std::vector<std::string> warnings;
  const Strategy s = parse_strategy(*e.strategy, m, run, c, warnings, true, e.origin);
  r.strategy = s;
  const MemoryReport mem = record_memory(m, run, c, s, headroom, r);
  const TimeReport t = estimate_step_time(m, run, c, s);
  r.step_time_s = t.step;
  r.tokens_per_sec_per_device = t.tokens_per_sec_per_device;
  std::vector<std::string> problems;
  if (!mem.host_fits) {
    problems.push_back("offloaded states " + gib(mem.host_peak / kGiB) + " per rank exceed the host budget " +
                       gib(mem.host_budget / kGiB) + " per device");
  }
  const bool device_fits = mem.peak * run.options.fit_factor_for(s.recompute) <= mem.budget;
  if (!device_fits) {
    const auto [term, bytes] = dominant_term(mem.stages[static_cast<std::size_t>(mem.peak_stage)]);
    problems.push_back("peak " + gib(mem.peak / kGiB) + " on stage " + std::to_string(mem.peak_stage) +
                       " exceeds the budget " + gib(mem.budget / kGiB) + " by " + gib((mem.peak - mem.budget) / kGiB) +
                       "; largest term " + term + " (" + gib(bytes / kGiB) + ")");
  }
  if (e.max_peak_gib && mem.peak / kGiB > *e.max_peak_gib) {
    problems.push_back("peak " + gib(mem.peak / kGiB) + " above the expected max_peak_gib " + gib(*e.max_peak_gib));
  }
  if (e.min_tokens_per_sec_per_device && t.tokens_per_sec_per_device < *e.min_tokens_per_sec_per_device) {
    problems.push_back(fixed(t.tokens_per_sec_per_device, 1) + " tokens/s per device, below the expected " +
                       fixed(*e.min_tokens_per_sec_per_device, 1));
  }
  for (const auto& p : problems) r.reason += (r.reason.empty() ? "" : "; ") + p;
  r.status = problems.empty() ? CheckStatus::pass : CheckStatus::fail;
}

void check_free(const CheckEntry& e, const Model& m, const Run& run, const Cluster& c, double headroom,
                SearchWorkspace* workspace, CheckResult& r) {
  SearchSpace space;
  space.model = &m;
  space.run = &run;
  space.cluster = &c;
  if (e.search) {
    space.pins = e.search->pins;
    for (const auto& [policy, on] : e.search->policies) space.policies.on[static_cast<std::size_t>(policy)] = on;
  }
  SearchOptions options;
  options.top_k = 1;
  // Only the fastest fitting strategy is reported, unless the entry keeps the front: then every
  // fitting strategy is estimated (the best-only shortcut skips some of the front's).
  options.best_only = !e.keep_front;
  options.workspace = workspace;
  options.headroom_bytes = headroom;
  // An expected maximum peak narrows the budget: only strategies under it count.
  if (e.max_peak_gib) options.headroom_bytes = std::max(headroom, c.device.capacity - *e.max_peak_gib * kGiB);
  const SearchResult found = run_search(space, options);
  if (verify_requested_by_environment()) {
    for (const auto& d : verify_reported(space, found, options.headroom_bytes)) {
      throw std::logic_error("verify: " + d.where + " " + strategy_to_string(d.strategy) + ": " + d.what);
    }
  }
  r.valid = found.valid;
  r.budget_gib = found.budget / kGiB;
  if (e.keep_front) r.front = found.front;
  if (found.top.empty()) {
    r.status = CheckStatus::fail;
    r.reason = "no strategy fits the budget " + gib(found.budget / kGiB) + " (" + with_commas(found.valid) +
               " valid strategies)";
    if (found.closest) {
      MemoryReport mem = estimate_memory(m, run, c, found.closest->strategy, options.headroom_bytes);
      const auto [term, bytes] = dominant_term(mem.stages[static_cast<std::size_t>(mem.peak_stage)]);
      r.reason += "; the smallest needs " + gib(mem.peak / kGiB) + " (" + strategy_to_string(found.closest->strategy) +
                  "), largest term " + term + " (" + gib(bytes / kGiB) + ")";
    }
    return;
  }
  const ScoredStrategy& best = found.top.front();
  r.strategy = best.strategy;
  record_memory(m, run, c, best.strategy, options.headroom_bytes, r);
  r.step_time_s = best.step_s;
  r.tokens_per_sec_per_device = best.tokens_per_sec_per_device;
  r.status = CheckStatus::pass;
  if (e.min_tokens_per_sec_per_device && best.tokens_per_sec_per_device < *e.min_tokens_per_sec_per_device) {
    r.status = CheckStatus::fail;
    r.reason = "the fastest fitting strategy reaches " + fixed(best.tokens_per_sec_per_device, 1) +
               " tokens/s per device, below the expected " + fixed(*e.min_tokens_per_sec_per_device, 1);
  }
}

}  // namespace

CheckResult run_check(const CheckEntry& e, SearchWorkspace* workspace) {
  const auto start = std::chrono::steady_clock::now();
  CheckResult r;
  r.name = e.name;
  r.model = e.model;
  r.file = e.file;
  r.line = e.line;
  r.device = e.device;
  r.devices = e.devices;
  r.pinned = e.strategy.has_value();
  try {
    if (e.error) throw InputError(*e.error);
    const Model m = load_model(e.model, e.origin);
    const Cluster c = make_cluster(e.device, e.devices, e.origin);
    Run run = make_run(e.run, true, e.origin);
    apply_fit_margin(run, m, c, parse_fit_margin(e.run.fit_margin, e.origin));
    resolve_device_facts(run, c.device);
    const double headroom = parse_headroom(e.headroom, c.device.capacity, e.origin);
    r.budget_gib = (c.device.capacity - headroom) / kGiB;
    if (e.strategy) {
      check_pinned(e, m, run, c, headroom, r);
    } else {
      check_free(e, m, run, c, headroom, workspace, r);
    }
  } catch (const InputError& err) {
    r.status = CheckStatus::error;
    r.reason = err.what();
  } catch (const std::exception& err) {  // not bad input: still one entry's error, not the run's
    r.status = CheckStatus::error;
    r.reason = std::string("internal error: ") + err.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<CheckResult> run_checks(const std::vector<CheckEntry>& entries) {
  std::vector<CheckResult> results(entries.size());
  SearchWorkspace workspace;  // one for every entry's search (search_workspace.hpp)
  tbb::parallel_for(std::size_t{0}, entries.size(),
                    [&](std::size_t i) { results[i] = run_check(entries[i], &workspace); });
  return results;
}

int check_exit_code(const std::vector<CheckResult>& results) {
  int code = 0;
  for (const auto& r : results) {
    if (r.status == CheckStatus::error) return 2;
    if (r.status == CheckStatus::fail) code = 1;
  }
  return code;
}

}  // namespace meshfit
