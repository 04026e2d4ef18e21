#include "search/triple_domains.hpp"

#include <algorithm>

#include "search/search_space.hpp"

namespace meshfit {

void divisors_into(std::vector<std::int64_t>& out, std::int64_t n) {
  out.clear();
  for (std::int64_t i = 1; i <= n / i; ++i) {  // i² ≤ n without overflow
    if (n % i) continue;
    out.push_back(i);
    if (i != n / i) out.push_back(n / i);
  }
  std::sort(out.begin(), out.end());
}

void TripleDomains::fill(const SearchSpace& space, const std::array<std::int64_t, 3>& triple) {
  using space_detail::allowed;
  using space_detail::count_allowed;
  const Model& m = *space.model;
  const Pins& pins = space.pins;
  tp = triple[0];
  cp = triple[1];
  pp = triple[2];
  dp = space.cluster->devices / (tp * cp * pp);

  divisors_into(bs, space.run->global_batch);
  bs.erase(std::remove_if(bs.begin(), bs.end(), [&](std::int64_t b) { return !allowed(pins.micro_batch, b); }),
           bs.end());
  ms.resize(bs.size());
  for (std::size_t bi = 0; bi < bs.size(); ++bi) {
    ms[bi] = space.run->global_batch % (dp * bs[bi]) == 0 ? space.run->global_batch / (dp * bs[bi]) : 0;
  }
  divisors_into(stage_divisors, dp * cp * tp);
  divisors_into(dp_divisors, dp);
  sps.clear();
  for (bool sp : {false, true}) {
    if (sp && tp == 1) break;
    if (pins.tp_comm_overlap.empty()) {
      sps.push_back({sp, false});
      continue;
    }
    for (bool overlap : {false, true}) {
      if (allowed(pins.tp_comm_overlap, overlap)) sps.push_back({sp, overlap});
    }
  }
  algos.assign(1, CpAlgo::none);
  if (cp > 1) algos.assign({CpAlgo::ring, CpAlgo::ulysses, CpAlgo::hybrid});
  if (cp > 1 && allowed(pins.cp_algo, CpAlgo::allgather) && !pins.cp_algo.empty()) algos.push_back(CpAlgo::allgather);
  extra_schedules.clear();
  for (Schedule sch : {Schedule::gpipe, Schedule::zb_h1, Schedule::dualpipev}) {
    if (!pins.schedule.empty() && allowed(pins.schedule, sch)) extra_schedules.push_back(sch);
  }
  eps.assign(1, 1);
  etps.assign(1, 1);
  if (m.is_moe()) eps = etps = stage_divisors;
  zeros.clear();
  auto add_zero = [&](int z, std::int64_t G) {
    if (pins.offload.empty()) {
      zeros.push_back({z, G, Offload::none});
      return;
    }
    for (Offload o : {Offload::none, Offload::optimizer, Offload::params}) {
      if (allowed(pins.offload, o)) zeros.push_back({z, G, o});
    }
  };
  if (allowed(pins.zero, std::int64_t{0})) add_zero(0, 1);
  if (dp * cp > 1) {
    for (int z = 1; z <= 3; ++z) {
      if (!allowed(pins.zero, std::int64_t{z})) continue;
      for (std::int64_t j : dp_divisors) {
        const std::int64_t G = cp * j;
        if (G >= 2 && allowed(pins.shard_group, G)) add_zero(z, G);
      }
    }
  }
  // n_rc (search-and-time.md §2.5, policy P12): a stage holds at most ⌈L_eff/pp⌉ layer slots,
  // whatever vpp (memory-model.md §5: the remainder goes one slot per virtual stage to the last
  // ones, which lie on consecutive stages), so n_rc from 1 to one below that is partial somewhere.
  const std::int64_t layer_slots =
      m.layers + (space.run->options.account_embedding ? 1 : 0) + (space.run->options.account_loss ? 1 : 0);
  recompute_layers.clear();
  if (!space.policies.enabled(Policy::full_recompute_all)) {
    for (std::int64_t n = 1; n < (layer_slots + pp - 1) / pp; ++n) recompute_layers.push_back(n);
  }
  recompute_layers.push_back(0);
  modes = allowed(pins.recompute, Recompute::none) + allowed(pins.recompute, Recompute::selective) +
          (allowed(pins.recompute, Recompute::full) ? static_cast<std::int64_t>(recompute_layers.size()) : 0);

  vpp_max = pp > 1 ? m.layers : 1;
  passes = vpp_max + (pp > 1 ? static_cast<std::int64_t>(extra_schedules.size()) : 0);
  const std::int64_t slots =
      m.layers + (space.run->options.account_embedding ? 1 : 0) + (space.run->options.account_loss ? 1 : 0);
  std::int64_t tail_weight = 0, tail_first = 0;
  if (space.weighted_tails) {
    for (std::int64_t v = vpp_max; v >= 1 && pp * v > slots; --v) {
      if (!allowed(pins.vpp, v) || (pp > 1 && !allowed(pins.schedule, default_schedule(v)))) continue;
      ++tail_weight;
      tail_first = v;
    }
  }
  pass_weight.assign(static_cast<std::size_t>(passes + 1), 0);
  all_passes = 0;
  for (std::int64_t pass = 1; pass <= passes; ++pass) {
    std::int64_t w = 1;
    if (pass <= vpp_max && tail_weight > 0 && pp * pass > slots) w = pass == tail_first ? tail_weight : 0;
    if (pp > 1 && !allowed(pins.schedule, pass_schedule(pass))) w = 0;
    if (!allowed(pins.vpp, pass_vpp(pass))) w = 0;
    pass_weight[static_cast<std::size_t>(pass)] = w;
    all_passes += w;
  }
  n_zero = static_cast<std::int64_t>(zeros.size());
  n_ep = count_allowed(pins.ep, eps);
  n_etp = count_allowed(pins.etp, etps);
  n_algo = count_allowed(pins.cp_algo, algos);
  n_sp = static_cast<std::int64_t>(
      std::count_if(sps.begin(), sps.end(), [&](const SpSetting& v) { return allowed(pins.sp, v.sp); }));
  below_pass = n_ep * n_etp * n_zero * modes;
  etp_domain_ok = true;
  for (std::int64_t etp : etps) {
    if (allowed(pins.etp, etp) && m.expert_ffn % etp != 0) etp_domain_ok = false;
  }
}

}  // namespace meshfit
