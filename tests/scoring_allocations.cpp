// Issue 5: "scoring a strategy allocates nothing". Every global operator new of this program is
// counted; the valid strategies of a few spaces are scored (memory estimate, step-time floor and
// step time, with per-thread storage as the search keeps it) once to warm that storage up, then
// again in the same order, and the second round must not allocate. A program of its own, since
// it replaces operator new for everything linked into it.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "engine/device_config.hpp"
#include "engine/model_config.hpp"
#include "engine/run_config.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "search/evaluator/step_time_evaluator.hpp"
#include "search/search_space.hpp"

namespace {
std::atomic<long> allocations{0};
std::atomic<bool> counting{false};
}  // namespace

void* operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

using namespace meshfit;

namespace {

struct Space {
  Model model;
  Run run;
  Cluster cluster;
};

Space space_of(const std::string& model, std::int64_t devices, std::int64_t seq, std::int64_t gb) {
  RunFlags f;
  f.seq = seq;
  f.global_batch = gb;
  return {load_model(model), make_run(f, true), make_cluster("h100-80gb", devices)};
}

// Every `stride`-th valid strategy of the space, in the search's order.
std::vector<Strategy> valid_strategies(const Space& sp, std::size_t stride) {
  SearchSpace space;
  space.model = &sp.model;
  space.run = &sp.run;
  space.cluster = &sp.cluster;
  std::vector<Strategy> out;
  std::size_t seen = 0;
  for (const auto& triple : space.triples()) {
    space.for_each(
        triple,
        [&](const Strategy& s, const Position& at) {
          if (at.failed == Position::kValid && seen++ % stride == 0) out.push_back(s);
        },
        [](std::size_t, std::int64_t) {});
  }
  return out;
}

// Scores every strategy as the search does; returns how many fit (so the work is not optimised away).
long score_all(const Space& sp, const std::vector<Strategy>& strategies, std::uint64_t context) {
  thread_local MemoryScratch scratch;
  thread_local MemoryReport mem;
  thread_local StepTimeScratch time_scratch;
  thread_local TimeReport time;
  scratch.memo_context = context;
  time_scratch.memo_context = context;
  long fitting = 0;
  for (const Strategy& s : strategies) {
    estimate_memory_into(mem, scratch, sp.model, sp.run, sp.cluster, s, 0);
    const double floor =
        step_time_floor(time_scratch, sp.model, sp.run, sp.cluster, s, scratch.prepare_plan(sp.model, s));
    estimate_step_time_into(time, time_scratch, sp.model, sp.run, sp.cluster, s, scratch.prepare_plan(sp.model, s));
    if (mem.fits && floor <= time.step) ++fitting;
  }
  return fitting;
}

void check_second_round_allocates_nothing(const Space& sp, std::size_t stride, std::uint64_t context) {
  const std::vector<Strategy> strategies = valid_strategies(sp, stride);
  REQUIRE(strategies.size() > 100);
  const long warm = score_all(sp, strategies, context);
  allocations = 0;
  counting = true;
  const long again = score_all(sp, strategies, context);
  counting = false;
  CHECK(again == warm);
  CHECK(allocations.load() == 0);
}

}  // namespace

TEST_CASE("the counter sees an allocation") {
  allocations = 0;
  counting = true;
  auto* v = new std::vector<int>(100);
  counting = false;
  delete v;
  CHECK(allocations.load() >= 2);
}

TEST_CASE("scoring allocates nothing once warm: dense, interleaved pipelines, CP, every recompute mode") {
  const Space sp = space_of("llama-3.1-70b", 64, 8192, 512);
  check_second_round_allocates_nothing(sp, 97, 11);
  check_second_round_allocates_nothing(sp, 97, 0);  // without the (z, G) memos
}

TEST_CASE("scoring allocates nothing once warm: MoE with EP, ETP and MTP") {
  const Space sp = space_of("deepseek-v3", 256, 4096, 1024);
  check_second_round_allocates_nothing(sp, 2003, 12);
}
