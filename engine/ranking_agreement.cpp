#include "engine/ranking_agreement.hpp"

#include <algorithm>
#include <cmath>

namespace meshfit {

RankingAgreement ranking_agreement(const std::vector<RankedRun>& runs, double resolution) {
  RankingAgreement a;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (std::size_t j = i + 1; j < runs.size(); ++j) {
      const RankedRun &x = runs[i], &y = runs[j];
      if (x.group != y.group || std::fabs(x.measured - y.measured) <= resolution * std::max(x.measured, y.measured))
        continue;
      ++a.pairs;
      if (x.estimate == y.estimate) {
        a.concordant += 0.5;
      } else if ((x.estimate < y.estimate) == (x.measured < y.measured)) {
        a.concordant += 1;
      }
    }
  }
  return a;
}

}  // namespace meshfit
