// The values every dimension below a (tp, cp, pp) triple takes (search-and-time.md §2.2), within
// the user's pins (§2.3), and how many candidates each subtree of the walk stands for: what the
// enumeration (search_space_enumerate.hpp) reads, made once per triple into storage a thread
// keeps from triple to triple (a search visits thousands of triples; none allocates once warm).
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "estimators/strategy.hpp"

namespace meshfit {

struct SearchSpace;

struct TripleDomains {
  std::int64_t tp = 1, cp = 1, pp = 1, dp = 1;
  std::vector<std::int64_t> bs;  // micro-batch sizes, rising: the divisors of gb (ruling 2)
  std::vector<std::int64_t> ms;  // m per size (0 when gb mod dp·b ≠ 0)
  std::vector<std::int64_t> stage_divisors, dp_divisors;
  // SP off and on (tp > 1), each with every tp_comm_overlap the pins list (off alone unless they
  // list more; the overlap is walked with SP since it decomposes SP's collectives, H25).
  struct SpSetting {
    bool sp = false;
    bool tp_comm_overlap = false;
  };
  std::vector<SpSetting> sps;
  std::vector<CpAlgo> algos;
  std::vector<Schedule> extra_schedules;  // listed-only schedules (H21), when the user lists them
  std::vector<std::int64_t> eps, etps;
  // ZeRO 0 with G = 1, then each stage with every G = cp·j, j | dp, G ≥ 2 (ruling 3); each
  // (z, G) with every offload the pins list (none alone unless they list more), innermost.
  struct ZeroSetting {
    int zero = 0;
    std::int64_t shard_group = 1;
    Offload offload = Offload::none;
  };
  std::vector<ZeroSetting> zeros;
  // The recompute settings under one micro-batch size: none, selective, and full with each n_rc
  // of `recompute_layers` (only 0, every layer, unless the policy full_recompute_all is off:
  // then 1 .. the most layers a stage holds − 1, and 0 last, as the canonical key orders them).
  std::vector<std::int64_t> recompute_layers;
  std::int64_t modes = 0;
  // vpp 1..L with the schedule it implies, then one pass per listed-only schedule (H21). A pass's
  // weight: 0 when the pins skip it, above 1 for the one vpp that stands for the H12 tail (vpp with
  // pp·vpp > L_eff, walked once with the weight of all of it; see Position).
  std::int64_t vpp_max = 1, passes = 0;
  std::vector<std::int64_t> pass_weight;  // by pass, 1..passes
  std::int64_t all_passes = 0;            // their sum
  // Allowed values per dimension, and the candidates per micro-batch size under one pass.
  std::int64_t n_zero = 0, n_ep = 0, n_etp = 0, n_algo = 0, n_sp = 0, below_pass = 0;
  bool etp_domain_ok = true;  // H5's expert clause holds for every etp enumerated

  // Fills every field for `triple` of `space`, reusing the vectors' storage.
  void fill(const SearchSpace& space, const std::array<std::int64_t, 3>& triple);
  Schedule default_schedule(std::int64_t vpp) const {
    return pp == 1 ? Schedule::none : (vpp >= 2 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b);
  }
  std::int64_t pass_vpp(std::int64_t pass) const {
    return pass <= vpp_max ? pass : extra(pass) == Schedule::dualpipev ? 2 : 1;
  }
  Schedule pass_schedule(std::int64_t pass) const { return pass <= vpp_max ? default_schedule(pass) : extra(pass); }

 private:
  Schedule extra(std::int64_t pass) const { return extra_schedules[static_cast<std::size_t>(pass - vpp_max - 1)]; }
};

// The divisors of n, rising, into `out` (its storage reused).
void divisors_into(std::vector<std::int64_t>& out, std::int64_t n);

}  // namespace meshfit
