// The switchable policies P1–P14 of docs/spec/search-and-time.md §3.2: practice, not necessity.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

enum class Policy : std::uint8_t {
  tp_in_node,
  tpcp_in_node,
  ep_in_node,
  powers_of_two,
  sp_with_tp,
  even_split,
  m_ge_pp,
  kv_heads_divisible,
  ulysses_kv_divisible,
  cp_min_tokens,
  hsdp_candidates,
  full_recompute_all,
  megatron_target,
  trainer_target  // P14: the run's target trainer (Run::target) can run it (trainer_targets.hpp)
};
inline constexpr std::size_t kPolicyCount = 14;

const char* policy_name(Policy p);  // the stable name of the search file ("tp_in_node")
const char* policy_id(Policy p);    // "P1" …
std::optional<Policy> policy_by_name(const std::string& name);

// Which policies are on; default states of §3.2 (P6 off by ruling 11).
struct PolicySet {
  std::array<bool, kPolicyCount> on{true, false, false, true, true, false, true,
                                    true, true,  true,  true, true, false, false};
  bool enabled(Policy p) const { return on[static_cast<std::size_t>(p)]; }
};

// Dimensions a policy's predicate reads (bit set), for "skipped when every one was pinned" (§2.3).
enum Dim : std::uint32_t {
  kTp = 1,
  kSp = 2,
  kCp = 4,
  kCpAlgo = 8,
  kPp = 16,
  kVpp = 32,
  kEp = 64,
  kEtp = 128,
  kZero = 256,
  kShardGroup = 512,
  kMicroBatch = 1024,
  kRecompute = 2048,
  kSchedule = 4096,
  kOffload = 8192,
  kTpOverlap = 16384
};
std::uint32_t policy_reads(Policy p);

// Whether `s` passes policy `p` (P12 concerns enumeration only and always passes here).
bool policy_holds(Policy p, const Model& m, const Run& run, const Cluster& c, const Strategy& s);

}  // namespace meshfit
