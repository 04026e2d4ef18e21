// The strategy space against the counts of docs/spec/search-and-time.md §10 (computed there by
// a script that applies exactly the rules), and the search's output invariants.
#include <doctest/doctest.h>

#include <functional>

#include <tbb/global_control.h>

#include "estimator_fixture.hpp"
#include "search/strategy_search.hpp"

using namespace meshfit;

namespace {

struct Counted {
  std::int64_t enumerated = 0, valid = 0, disagreements = 0;
  std::map<std::int64_t, std::int64_t> by_tp, by_pp;
};

Counted count_model(const Model& model, std::int64_t devices, std::int64_t seq, std::int64_t global_batch,
                    const PolicySet& policies, bool prune) {
  RunFlags f;
  f.seq = seq;
  f.global_batch = global_batch;
  const Run run = make_run(f, true);
  const Cluster cluster = make_cluster("h100-80gb", devices);
  SearchSpace space;
  space.model = &model;
  space.run = &run;
  space.cluster = &cluster;
  space.policies = policies;
  space.prune_subtrees = prune;
  Counted c;
  for (const auto& t : space.triples()) {
    space.for_each(
        t,
        [&](const Strategy& s, const Position& at) {
          c.enumerated += at.weight;
          // The rule plan's verdict agrees with checking every rule in table order.
          const auto failure = space.first_failure(s);
          if ((failure ? slot_index(*failure) : Position::kValid) != at.failed) ++c.disagreements;
          if (failure) return;
          REQUIRE(at.weight == 1);
          ++c.valid;
          ++c.by_tp[s.tp];
          ++c.by_pp[s.pp];
        },
        [&](std::size_t, std::int64_t n) { c.enumerated += n; });
  }
  return c;
}

Counted count(std::int64_t devices, const PolicySet& policies, bool prune = true) {
  static const Model model = load_model("llama-3.1-70b");
  return count_model(model, devices, 8192, 2048, policies, prune);
}

PolicySet defaults_with_even_split() {
  PolicySet p;
  p.on[static_cast<std::size_t>(Policy::even_split)] = true;  // §10 counts with P6 on (ruling 11)
  return p;
}

}  // namespace

TEST_CASE("§10: Llama-3.1-70B on 64 devices, enumerated and valid under the default policies") {
  Counted c = count(64, defaults_with_even_split());
  CHECK(c.enumerated == 3'813'408);
  CHECK(c.disagreements == 0);
  CHECK(c.valid == 73'800);
  CHECK(c.by_tp[1] == 26'829);
  CHECK(c.by_tp[2] == 23'922);
  CHECK(c.by_tp[4] == 17'280);
  CHECK(c.by_tp[8] == 5'769);
  CHECK(c.by_pp[1] == 5'082);
  CHECK(c.by_pp[16] == 1'656);
}

TEST_CASE("the rule plan credits every candidate to its first failing rule in table order") {
  // Unpruned, every leaf is visited with the plan's verdict; it must equal checking each rule.
  const Counted c = count(64, defaults_with_even_split(), false);
  CHECK(c.enumerated == 3'813'408);
  CHECK(c.valid == 73'800);
  CHECK(c.disagreements == 0);
}

TEST_CASE("§10: 1,024 and 16,384 devices") {
  const Counted a = count(1024, defaults_with_even_split());
  CHECK(a.enumerated == 26'743'896);
  CHECK(a.disagreements == 0);
  CHECK(a.valid == 60'210);
  const Counted b = count(16384, defaults_with_even_split());
  CHECK(b.enumerated == 97'644'240);
  CHECK(b.valid == 13'923);
}

TEST_CASE("§10: hard rules only (every policy off but P12) on 64 devices") {
  PolicySet none;
  none.on.fill(false);
  none.on[static_cast<std::size_t>(Policy::full_recompute_all)] = true;
  CHECK(count(64, none).valid == 856'329);
}

TEST_CASE("the rule plan's verdicts on mixture-of-experts spaces (ep and etp loops), unpruned") {
  // Every leaf visited, its verdict against checking each rule in table order: the ep, etp and
  // ZeRO levels' rules (H15, H16, P3, P4, P11) with the loops above them varying.
  const Model qwen = load_model("qwen3-30b-a3b");
  const Model mixtral = load_model("mixtral-8x7b");
  PolicySet hard_only;
  hard_only.on.fill(false);
  hard_only.on[static_cast<std::size_t>(Policy::full_recompute_all)] = true;
  struct Case {
    const Model* model;
    std::int64_t devices, global_batch;
    PolicySet policies;
  };
  // On 12 devices ep·etp reaches 12 and 6 (P3 ep_in_node, switched on, and P4 powers_of_two fail
  // at the etp level, P4 per micro-batch size).
  PolicySet experts_in_node;
  experts_in_node.on[static_cast<std::size_t>(Policy::ep_in_node)] = true;
  const Case cases[] = {{&qwen, 8, 32, PolicySet{}},
                        {&qwen, 8, 32, hard_only},
                        {&mixtral, 16, 64, PolicySet{}},
                        {&qwen, 12, 24, experts_in_node}};
  for (const Case& k : cases) {
    CAPTURE(k.model->name);
    CAPTURE(k.devices);
    const Counted plain = count_model(*k.model, k.devices, 4096, k.global_batch, k.policies, false);
    const Counted pruned = count_model(*k.model, k.devices, 4096, k.global_batch, k.policies, true);
    CHECK(plain.disagreements == 0);
    CHECK(pruned.disagreements == 0);
    CHECK(plain.enumerated == pruned.enumerated);
    CHECK(plain.valid == pruned.valid);
    CHECK(plain.valid > 0);
  }
}

TEST_CASE("a triple walked within another triple's visit on the same thread leaves both walks whole") {
  // The enumeration keeps its domains and rule state per thread, from triple to triple; a walk
  // started inside another's visit must get storage of its own and leave the outer walk's alone.
  static const Model model = load_model("llama-3.1-70b");
  RunFlags f;
  f.seq = 8192;
  f.global_batch = 512;
  const Run run = make_run(f, true);
  const Cluster cluster = make_cluster("h100-80gb", 64);
  SearchSpace space;
  space.model = &model;
  space.run = &run;
  space.cluster = &cluster;
  struct Log {
    std::vector<std::pair<Strategy, std::size_t>> leaves;  // each visit, with its verdict
    std::array<std::int64_t, kRuleSlots> rejected{};       // the subtrees credited, per rule
  };
  auto same = [](const Log& a, const Log& b) { return a.leaves == b.leaves && a.rejected == b.rejected; };
  // One visitor type for both walks, so that both are the same instantiation of for_each (each
  // instantiation has its own per-thread storage).
  std::function<void(const std::array<std::int64_t, 3>&, Log&, const std::function<void(std::size_t)>&)> walk;
  walk = [&](const std::array<std::int64_t, 3>& triple, Log& log, const std::function<void(std::size_t)>& inside) {
    space.for_each(
        triple,
        [&](const Strategy& s, const Position& at) {
          log.leaves.emplace_back(s, at.failed);
          inside(log.leaves.size());
        },
        [&](std::size_t slot, std::int64_t n) { log.rejected[slot] += n; });
  };
  const std::function<void(std::size_t)> nothing = [](std::size_t) {};
  // Two triples with different domains (pp, and so the passes) and many visits each.
  const std::array<std::int64_t, 3> outer{2, 1, 4}, inner{8, 1, 2};
  Log outer_alone, inner_alone;
  walk(outer, outer_alone, nothing);
  walk(inner, inner_alone, nothing);
  REQUIRE(outer_alone.leaves.size() > 100);
  REQUIRE(inner_alone.leaves.size() > 100);
  Log outer_log, inner_log;
  walk(outer, outer_log, [&](std::size_t visits) {
    if (visits == 50) walk(inner, inner_log, nothing);
  });
  CHECK(same(inner_log, inner_alone));
  CHECK(same(outer_log, outer_alone));
}
