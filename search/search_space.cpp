#include "search/search_space.hpp"

#include <stdexcept>
#include <string>

namespace meshfit {

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> d;
  for (std::int64_t i = 1; i <= n / i; ++i) {  // i² ≤ n without overflow
    if (n % i) continue;
    d.push_back(i);
    if (i != n / i) d.push_back(n / i);
  }
  std::sort(d.begin(), d.end());
  return d;
}

std::uint32_t Pins::given() const {
  std::uint32_t g = 0;
  if (!tp.empty()) g |= kTp;
  if (!sp.empty()) g |= kSp;
  if (!cp.empty()) g |= kCp;
  if (!cp_algo.empty()) g |= kCpAlgo;
  if (!pp.empty()) g |= kPp;
  if (!vpp.empty()) g |= kVpp;
  if (!ep.empty()) g |= kEp;
  if (!etp.empty()) g |= kEtp;
  if (!zero.empty()) g |= kZero;
  if (!shard_group.empty()) g |= kShardGroup;
  if (!micro_batch.empty()) g |= kMicroBatch;
  if (!recompute.empty()) g |= kRecompute;
  if (!schedule.empty()) g |= kSchedule;
  if (!offload.empty()) g |= kOffload;
  if (!tp_comm_overlap.empty()) g |= kTpOverlap;
  return g;
}

std::size_t slot_index(const RuleSlot& r) {
  return r.policy ? kHardRuleSlots + static_cast<std::size_t>(r.soft) : static_cast<std::size_t>(r.hard);
}

std::string slot_name(std::size_t index) {
  if (index >= kHardRuleSlots) return policy_name(static_cast<Policy>(index - kHardRuleSlots));
  return rule_name(static_cast<HardRule>(index));
}

std::string slot_id(std::size_t index) {
  if (index >= kHardRuleSlots) return policy_id(static_cast<Policy>(index - kHardRuleSlots));
  return rule_id(static_cast<HardRule>(index));
}

std::vector<std::array<std::int64_t, 3>> SearchSpace::triples() const {
  using space_detail::allowed;
  const std::int64_t N = cluster->devices;
  std::vector<std::array<std::int64_t, 3>> out;
  for (std::int64_t tp : divisors(N)) {
    if (!allowed(pins.tp, tp)) continue;
    for (std::int64_t cp : divisors(N / tp)) {
      if (!allowed(pins.cp, cp)) continue;
      for (std::int64_t pp : divisors(N / (tp * cp))) {
        if (allowed(pins.pp, pp)) out.push_back({tp, cp, pp});
      }
    }
  }
  return out;
}

std::optional<RuleSlot> SearchSpace::first_failure(const Strategy& s) const {
  const HardRule hard = first_broken_rule(*model, *run, *cluster, s);
  if (hard != HardRule::ok) return RuleSlot{false, hard, Policy::tp_in_node};
  const std::uint32_t given = pins.given();
  for (std::size_t i = 0; i < kPolicyCount; ++i) {
    const Policy p = static_cast<Policy>(i);
    if (!policies.enabled(p)) continue;
    const std::uint32_t reads = policy_reads(p);
    if ((given & reads) == reads) continue;  // every dimension it reads was given by the user (§2.3)
    if (!policy_holds(p, *model, *run, *cluster, s)) return RuleSlot{true, HardRule::ok, p};
  }
  return std::nullopt;
}

bool SearchSpace::slot_holds(std::size_t slot, const Strategy& s) const {
  if (slot >= kHardRuleSlots)
    return policy_holds(static_cast<Policy>(slot - kHardRuleSlots), *model, *run, *cluster, s);
  return rule_holds(static_cast<HardRule>(slot), *model, *run, *cluster, s);
}

void SearchSpace::check_pins() const {
  const std::int64_t N = cluster->devices;
  auto in = [](const std::vector<std::int64_t>& dom, std::int64_t v) {
    return std::find(dom.begin(), dom.end(), v) != dom.end();
  };
  const auto dN = divisors(N);
  for (std::int64_t v : pins.tp) {
    if (!in(dN, v))
      throw std::invalid_argument("--tp: " + std::to_string(v) + " is not a divisor of the " + std::to_string(N) +
                                  " devices");
  }
  for (std::int64_t v : pins.cp) {
    if (!in(dN, v))
      throw std::invalid_argument("--cp: " + std::to_string(v) + " is not a divisor of the " + std::to_string(N) +
                                  " devices");
  }
  for (std::int64_t v : pins.pp) {
    if (!in(dN, v))
      throw std::invalid_argument("--pp: " + std::to_string(v) + " is not a divisor of the " + std::to_string(N) +
                                  " devices");
  }
  const auto dgb = divisors(run->global_batch);
  for (std::int64_t v : pins.micro_batch) {
    if (!in(dgb, v))
      throw std::invalid_argument("--mbs: " + std::to_string(v) + " is not a divisor of the global batch " +
                                  std::to_string(run->global_batch));
  }
  for (std::int64_t v : pins.vpp) {
    if (v < 1 || v > model->layers)
      throw std::invalid_argument("--vpp: " + std::to_string(v) + " is outside 1.." + std::to_string(model->layers));
  }
  for (std::int64_t v : pins.zero) {
    if (v < 0 || v > 3) throw std::invalid_argument("--zero: " + std::to_string(v) + " is not 0, 1, 2 or 3");
  }
  if (!model->is_moe()) {
    for (std::int64_t v : pins.ep) {
      if (v != 1) throw std::invalid_argument("--ep: " + model->name + " has no experts; ep must be 1 (rule H18)");
    }
    for (std::int64_t v : pins.etp) {
      if (v != 1) throw std::invalid_argument("--etp: " + model->name + " has no experts; etp must be 1 (rule H18)");
    }
  }
}

}  // namespace meshfit
