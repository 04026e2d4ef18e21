#include "search/strategy_search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include "search/strategy_key.hpp"
#include "search/search_workspace.hpp"
#include "search/strategy_scorer.hpp"

namespace meshfit {

namespace {
struct Stopped {};  // thrown out of a triple's walk when the stop flag is seen
}  // namespace

SearchResult run_search(const SearchSpace& space, const SearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto triples = space.triples();
  const double budget = space.cluster->device.capacity - options.headroom_bytes;
  std::atomic<std::size_t> done{0};
  std::atomic<bool> interrupted{false};
  // The enumeration's passes are the space's settings.
  SearchSpace walked = space;
  walked.prune_subtrees = space.prune_subtrees && options.passes.enabled(PruningPass::rule_subtrees);
  walked.weighted_tails = space.weighted_tails && options.passes.enabled(PruningPass::weighted_vpp_tails);
  const ScoringSetup setup{
      walked, options.passes, options.top_k, options.best_only, options.collect_cloud, options.headroom_bytes, budget};
  // Each thread's evaluator storage: the caller's workspace, or one for this search alone (never a
  // static). A thread may run tasks of several searches in turn, as meshfit check does: each task
  // tells its state which search it serves.
  SearchWorkspace own;
  SearchWorkspace& workspace = options.workspace ? *options.workspace : own;
  const std::uint64_t context = options.reuse ? workspace.next_context() : 0;
  const StepConstants constants = precompute_step_constants(*space.model, *space.run);
  // best_only with k = 1: the fastest fitting step time (ns) any thread has found.
  std::atomic<std::int64_t> fastest{INT64_MAX};
  SharedBounds shared(options.top_k);

  TaskTally init;
  init.k = options.top_k;
  const TaskTally total = tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, triples.size(), 1), init,
      [&](const tbb::blocked_range<std::size_t>& range, TaskTally acc) {
        ScoringState& state = workspace.local();
        state.begin(context, constants);
        TaskScorer scorer(setup, state, fastest, shared, acc);
        std::size_t polls = 0;
        for (std::size_t t = range.begin(); t != range.end(); ++t) {
          if (options.stop && options.stop->load()) {
            interrupted = true;
            break;
          }
          scorer.begin_triple();
          try {
            walked.for_each(
                triples[t], state.walk,
                [&](const Strategy& s, const Position& at) {
                  // One triple's walk can last many seconds on the largest spaces: the stop flag is
                  // read every 64 micro-batch runs too, so that any search stops within a fraction of one.
                  if (at.first && options.stop && (++polls & 63) == 0 && options.stop->load()) throw Stopped{};
                  if (at.first) scorer.open_run();
                  acc.enumerated += at.weight;
                  if (at.failed != Position::kValid) {
                    acc.histogram[at.failed] += at.weight;
                    return;
                  }
                  if (at.weight != 1) throw std::logic_error("a weighted H12-tail candidate passed every rule");
                  scorer.add(s);
                },
                [&](std::size_t slot, std::int64_t count) {
                  acc.enumerated += count;
                  acc.histogram[slot] += count;
                });
          } catch (const Stopped&) {  // the triple's open run is left unscored: the result is marked partial
            interrupted = true;
            break;
          }
          scorer.end_triple();
          const std::size_t n = ++done;
          if (options.progress) options.progress(n, triples.size());
        }
        state.end();
        return acc;
      },
      [](TaskTally a, const TaskTally& b) {
        a.join(b);
        return a;
      });

  SearchResult r;
  r.budget = budget;
  r.front = pareto_front(total.front.points(), options.dedupe_ties);
  r.top = total.top;
  for (auto& x : r.top) {
    x.dominated = std::none_of(r.front.begin(), r.front.end(), [&](const ScoredStrategy& f) {
      return f.mem == x.mem && f.time_ns == x.time_ns && !key_less(f.strategy, x.strategy) &&
             !key_less(x.strategy, f.strategy);
    });
  }
  r.enumerated = total.enumerated;
  r.valid = total.valid;
  r.fitting = total.fitting;
  r.estimated = total.estimated;
  r.histogram = total.histogram;
  if (r.fitting == 0) r.closest = total.closest;
  r.interrupted = interrupted.load();
  r.cloud = total.cloud;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace meshfit
