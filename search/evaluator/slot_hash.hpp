// The slot of a key in the estimators' direct-mapped per-search tables (the layer kinds'
// activations, memory_evaluator.hpp's KindCache; their times, step_time_evaluator.hpp's LayerTimeCache).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace meshfit {

// Slots per table: a search meets up to (sp, CP algorithm, ep, etp, b) ≈ 10^4 keys per (tp, cp,
// pp) and walks them again for every vpp, so a table smaller than that misses on every pass.
inline constexpr std::size_t kTableSlots = 4096;

// FNV-1a over the key's values, then a 64-bit finalizer (MurmurHash3's fmix64) so that the low
// bits taken for the slot depend on every value.
template <std::size_t N>
std::size_t slot_of(const std::array<std::int64_t, N>& key) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::int64_t v : key) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return static_cast<std::size_t>(h & (kTableSlots - 1));
}

// Two keys equal, value by value: std::array's == calls memcmp for these, a library call per
// lookup on the scoring hot path; this loop the compiler unrolls.
template <std::size_t N>
bool same_key(const std::array<std::int64_t, N>& a, const std::array<std::int64_t, N>& b) {
  bool same = true;
  for (std::size_t i = 0; i < N; ++i) same = same && a[i] == b[i];
  return same;
}

}  // namespace meshfit
