// The strategy space against the counts of shared/spec/search-and-time.md §10 (computed there by
// a script that applies exactly the rules), and the search's output invariants.
#include <doctest/doctest.h>

#include <tbb/global_control.h>

#include "estimator_fixture.hpp"
#include "search/strategy_search.hpp"

using namespace meshfit;

namespace {

struct Counted {
  std::int64_t enumerated = 0, valid = 0, disagreements = 0;
  std::map<std::int64_t, std::int64_t> by_tp, by_pp;
};

Counted count(std::int64_t devices, const PolicySet& policies, bool prune = true) {
  static const Model model = load_model("llama-3.1-70b");
  RunFlags f;
  f.seq = 8192;
  f.global_batch = 2048;
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
    space.for_each(t, [&](const Strategy& s, const Position& at) {
      c.enumerated += at.weight;
      // The rule plan's verdict agrees with checking every rule in table order.
      const auto failure = space.first_failure(s);
      if ((failure ? slot_index(*failure) : Position::kValid) != at.failed) ++c.disagreements;
      if (failure) return;
      REQUIRE(at.weight == 1);
      ++c.valid;
      ++c.by_tp[s.tp];
      ++c.by_pp[s.pp];
    }, [&](std::size_t, std::int64_t n) { c.enumerated += n; });
  }
  return c;
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
