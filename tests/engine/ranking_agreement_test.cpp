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
  // Within 1 % of each other, measurements are no order: 100 and 100.9 drop out, each with 102.5 stays.
  const std::vector<RankedRun> close = {{"d", 2, 100}, {"d", 1, 100.9}, {"d", 3, 102.5}};
  const RankingAgreement c = ranking_agreement(close);
  CHECK(c.pairs == 2);  // (100, 102.5) and (100.9, 102.5), both ordered as measured
  CHECK(c.concordant == 2);
  CHECK(ranking_agreement(close, 0).pairs == 3);
}
