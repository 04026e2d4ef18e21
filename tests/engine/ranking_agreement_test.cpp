#include "engine/ranking_agreement.hpp"

#include <doctest/doctest.h>

using namespace meshfit;

TEST_CASE("ranking agreement: the pairs of a source ordered as measured, ties in the estimate half") {
  // Source a: estimates 1, 2, 3 against measurements 1, 3, 2: pairs (1,2) and (1,3) agree, (2,3)
  // does not. Source b: equal estimates of different measurements, half. Source c: equal
  // measurements, no pair. Across sources, no pair. 2.5 of 4.
  const std::vector<RankedRun> runs = {{"a", 1, 1}, {"a", 2, 3}, {"a", 3, 2}, {"b", 5, 1},
                                       {"b", 5, 2}, {"c", 1, 7}, {"c", 2, 7}};
  const RankingAgreement r = ranking_agreement(runs);
  CHECK(r.pairs == 4);
  CHECK(r.concordant == 2.5);
  CHECK(r.share() == 0.625);
  CHECK(ranking_agreement({}).share() == 0);
}
