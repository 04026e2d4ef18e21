// The enumeration loop of SearchSpace (a template: the visitor is inlined in the hot loop).
#pragma once

#include <algorithm>

namespace meshfit {

namespace space_detail {
template <class T>
bool allowed(const std::vector<T>& pins, const T& v) {
  return pins.empty() || std::find(pins.begin(), pins.end(), v) != pins.end();
}
}  // namespace space_detail

template <class Visit>
void SearchSpace::for_each(const std::array<std::int64_t, 3>& triple, Visit&& visit) const {
  using space_detail::allowed;
  const Model& m = *model;
  const std::int64_t N = cluster->devices;
  const std::int64_t tp = triple[0], cp = triple[1], pp = triple[2];
  const std::int64_t dp = N / (tp * cp * pp);
  const std::vector<std::int64_t> bs = micro_batches();
  const std::vector<std::int64_t> stage_divisors = divisors(dp * cp * tp);
  const std::vector<std::int64_t> dp_divisors = divisors(dp);
  std::vector<bool> sps = {false};
  if (tp > 1) sps.push_back(true);
  std::vector<CpAlgo> algos = {CpAlgo::none};
  if (cp > 1) algos = {CpAlgo::ring, CpAlgo::ulysses, CpAlgo::hybrid};
  if (cp > 1 && allowed(pins.cp_algo, CpAlgo::allgather) && !pins.cp_algo.empty()) algos.push_back(CpAlgo::allgather);
  // Listed-only schedules (H21) join the enumeration when the user lists them.
  std::vector<Schedule> extra_schedules;
  for (Schedule sch : {Schedule::gpipe, Schedule::zb_h1, Schedule::dualpipev}) {
    if (!pins.schedule.empty() && allowed(pins.schedule, sch)) extra_schedules.push_back(sch);
  }
  std::vector<std::int64_t> eps = {1}, etps = {1};
  if (m.is_moe()) eps = etps = stage_divisors;

  Strategy s;
  s.tp = tp;
  s.cp = cp;
  s.pp = pp;
  s.dp = dp;
  for (bool sp : sps) {
    if (!allowed(pins.sp, sp)) continue;
    s.sp = sp;
    for (CpAlgo algo : algos) {
      if (!allowed(pins.cp_algo, algo)) continue;
      s.cp_algo = algo;
      s.cp_u = algo == CpAlgo::ulysses ? cp
               : algo == CpAlgo::hybrid
                   ? hybrid_ulysses_degree(m, s, cluster->device.devices_per_node,
                                           policies.enabled(Policy::ulysses_kv_divisible))
                   : 1;
      // vpp 1..L with the schedule it implies, then one pass per listed-only schedule (H21).
      const std::int64_t vpp_max = pp > 1 ? m.layers : 1;
      const std::int64_t passes = vpp_max + (pp > 1 ? static_cast<std::int64_t>(extra_schedules.size()) : 0);
      const std::int64_t slots = m.layers + (run->options.account_embedding ? 1 : 0) + (run->options.account_loss ? 1 : 0);
      auto default_schedule = [&](std::int64_t vpp) {
        return pp == 1 ? Schedule::none : (vpp >= 2 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b);
      };
      auto enumerated_vpp = [&](std::int64_t vpp) {
        return allowed(pins.vpp, vpp) && (pp == 1 || allowed(pins.schedule, default_schedule(vpp)));
      };
      // The H12 tail: vpp with pp·vpp > L_eff, walked once with the weight of all of it.
      std::int64_t tail_weight = 0, tail_first = 0;
      if (weighted_tails) {
        for (std::int64_t v = vpp_max; v >= 1 && pp * v > slots; --v) {
          if (!enumerated_vpp(v)) continue;
          ++tail_weight;
          tail_first = v;
        }
      }
      for (std::int64_t pass = 1; pass <= passes; ++pass) {
        std::int64_t weight = 1;
        if (pass <= vpp_max) {
          if (tail_weight > 0 && pp * pass > slots) {
            if (pass != tail_first) continue;
            weight = tail_weight;
          }
          s.vpp = pass;
          s.schedule = default_schedule(pass);
          if (pp > 1 && !allowed(pins.schedule, s.schedule)) continue;
        } else {
          s.schedule = extra_schedules[static_cast<std::size_t>(pass - vpp_max - 1)];
          s.vpp = s.schedule == Schedule::dualpipev ? 2 : 1;
        }
        if (!allowed(pins.vpp, s.vpp)) continue;
        for (std::int64_t ep : eps) {
          if (!allowed(pins.ep, ep)) continue;
          s.ep = ep;
          for (std::int64_t etp : etps) {
            if (!allowed(pins.etp, etp)) continue;
            s.etp = etp;
            // ZeRO 0 with G = 1, then each stage with every G = cp·j, j | dp, G ≥ 2 (ruling 3).
            std::vector<std::pair<int, std::int64_t>> zeros;
            if (allowed(pins.zero, std::int64_t{0})) zeros.emplace_back(0, 1);
            if (dp * cp > 1) {
              for (int z = 1; z <= 3; ++z) {
                if (!allowed(pins.zero, std::int64_t{z})) continue;
                for (std::int64_t j : dp_divisors) {
                  const std::int64_t G = cp * j;
                  if (G >= 2 && allowed(pins.shard_group, G)) zeros.emplace_back(z, G);
                }
              }
            }
            for (const auto& [z, G] : zeros) {
              s.zero = z;
              s.shard_group = G;
              std::size_t mode_index = 0;
              for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
                if (!allowed(pins.recompute, rc)) continue;
                s.recompute = rc;
                s.recompute_layers = 0;
                // b rises innermost: `first` marks the start of a run over b with all else fixed.
                for (std::size_t bi = 0; bi < bs.size(); ++bi) {
                  const std::int64_t b = bs[bi];
                  s.micro_batch = b;
                  s.num_microbatches = run->global_batch % (dp * b) == 0 ? run->global_batch / (dp * b) : 0;
                  visit(s, Position{bi == 0, bi, mode_index, weight});
                }
                ++mode_index;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace meshfit
