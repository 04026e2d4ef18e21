// The evaluator's tables over a walked triple's values (search/evaluator/triple_table.hpp): one
// entry per combination of the walked values, found by their positions, and nothing outside the
// walk or outside the triple's domains.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "search/evaluator/triple_table.hpp"

using namespace meshfit;

namespace {
Strategy at(std::int64_t tp, std::int64_t cp, bool sp, CpAlgo algo, std::int64_t ep, std::int64_t etp, std::int64_t b) {
  Strategy s;
  s.tp = tp;
  s.cp = cp;
  s.sp = sp;
  s.cp_algo = algo;
  s.ep = ep;
  s.etp = etp;
  s.micro_batch = b;
  return s;
}
}  // namespace

TEST_CASE("a triple table gives each combination of the walked values its own entry") {
  const std::vector<CpAlgo> algos{CpAlgo::ring, CpAlgo::ulysses, CpAlgo::hybrid};
  const std::vector<std::int64_t> eps{1, 2, 4}, etps{1, 2}, bs{1, 3, 9};
  TripleTable<int> table;
  bool filled = true;
  CHECK(table.find(at(2, 2, false, CpAlgo::ring, 1, 1, 1), 0, filled) == nullptr);  // closed: outside a walk
  table.open(TripleValues{2, 2, algos, eps, etps, bs}, 2);
  // 2 SP values × 3 algorithms × 3 ep × 2 etp × 3 b × 2 flags = 216 distinct entries, each new once.
  std::set<int*> seen;
  for (bool sp : {false, true})
    for (CpAlgo a : algos)
      for (std::int64_t ep : eps)
        for (std::int64_t etp : etps)
          for (std::int64_t b : bs)
            for (std::size_t flag : {0u, 1u}) {
              int* e = table.find(at(2, 2, sp, a, ep, etp, b), flag, filled);
              REQUIRE(e != nullptr);
              CHECK_FALSE(filled);
              seen.insert(e);
            }
  CHECK(seen.size() == 216);
  // Met again: the same entry, filled.
  int* first = table.find(at(2, 2, true, CpAlgo::hybrid, 4, 2, 9), 1, filled);
  CHECK(filled);
  CHECK(table.find(at(2, 2, true, CpAlgo::hybrid, 4, 2, 9), 1, filled) == first);
  // Values that are not the triple's: no entry.
  CHECK(table.find(at(4, 2, false, CpAlgo::ring, 1, 1, 1), 0, filled) == nullptr);       // another tp
  CHECK(table.find(at(2, 1, false, CpAlgo::ring, 1, 1, 1), 0, filled) == nullptr);       // another cp
  CHECK(table.find(at(2, 2, false, CpAlgo::allgather, 1, 1, 1), 0, filled) == nullptr);  // algorithm not walked
  CHECK(table.find(at(2, 2, false, CpAlgo::ring, 8, 1, 1), 0, filled) == nullptr);       // ep
  CHECK(table.find(at(2, 2, false, CpAlgo::ring, 1, 4, 1), 0, filled) == nullptr);       // etp
  CHECK(table.find(at(2, 2, false, CpAlgo::ring, 1, 1, 2), 0, filled) == nullptr);       // b between sizes
  CHECK(table.find(at(2, 2, false, CpAlgo::ring, 1, 1, 1), 2, filled) == nullptr);       // flag
  // Opened again for the next triple: every entry empty again.
  table.open(TripleValues{2, 2, algos, eps, etps, bs}, 2);
  table.find(at(2, 2, true, CpAlgo::hybrid, 4, 2, 9), 1, filled);
  CHECK_FALSE(filled);
  table.close();
  CHECK(table.find(at(2, 2, true, CpAlgo::hybrid, 4, 2, 9), 1, filled) == nullptr);
}
