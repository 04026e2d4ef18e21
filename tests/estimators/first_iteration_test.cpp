// A measurement read after a run's first iteration (overheads.hpp first_iteration_allocated):
// the first backward runs before the optimizer's first step creates its states.
#include <doctest/doctest.h>

#include "engine/validation_cases.hpp"
#include "engine/validation_summary.hpp"
#include "estimators/model_states.hpp"
#include "estimators/overheads.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "test_support.hpp"

using namespace meshfit;

TEST_CASE("first_iteration_allocated: the backward without the optimizer's moments, or the step") {
  // Adam with an fp32 master copy: 12 bytes per shard element, 8 of them the moments.
  Run run;
  run.precision.beta_master = 4;
  ModelStates states;
  states.optimizer_elements = 1e9;
  states.optimizer = 12e9;
  CHECK(optimizer_moments(states, run) == doctest::Approx(8e9));
  states.optimizer = 0;  // offloaded to the host
  CHECK(optimizer_moments(states, run) == 0);

  // weights 10, grads 10, optimizer 30 of which 20 moments, activations 35, transient 5, step
  // transient 10 (GB): backward 90, step 60; first iteration max(90 − 20, 60) = 70.
  StageMemory st;
  st.weights = 10e9;
  st.grads = 10e9;
  st.optimizer = 30e9;
  st.optimizer_moments = 20e9;
  st.activations = 35e9;
  st.transient = 5e9;
  st.step_transient = 10e9;
  CHECK(backward_allocated(st) == doctest::Approx(90e9));
  CHECK(step_allocated(st) == doctest::Approx(60e9));
  CHECK(first_iteration_allocated(st) == doctest::Approx(70e9));
  // With 15 GB of activations the step binds: max(70 − 20, 60) = 60.
  st.activations = 15e9;
  CHECK(first_iteration_allocated(st) == doctest::Approx(60e9));
}

TEST_CASE("validate compares a case read after the first iteration with that iteration's peak") {
  // framework-defaults.yaml's DeepSpeed case (ZeRO-3 over 8 ranks, full recompute), read once as
  // written and once after its first iteration: its backward binds, so the first iteration's peak
  // is the steady one less the moments, 8 of Adam's 12 bytes per shard element.
  auto cases = load_validation_cases(test::data_path("validation/framework-defaults.yaml"));
  REQUIRE(cases.size() == 2);
  ValidationCase c = cases[1];
  c.compared = MemoryMetric::allocated;
  const MemoryReport r = estimate_memory(c.model, c.run, c.cluster, c.strategy);
  const StageMemory& st = r.stages[0];
  REQUIRE_FALSE(st.step_phase_binds);
  CHECK(compared_bytes(c, st, r) == st.allocated);
  c.first_iteration = true;
  CHECK(compared_bytes(c, st, r) == doctest::Approx(st.allocated - st.optimizer * 8 / 12));
}
