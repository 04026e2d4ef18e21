// Figures of a strategy that do not depend on its ZeRO stage or shard group (z, G), kept for the
// strategies that differ from it only there. The search enumerates (z, G) outside the recompute
// mode and the micro-batch size, about 3·d(dp) settings of (z, G) per setting of the rest
// (search-and-time.md §2.6's loop order), so all but the first reuse the activation side of the
// memory model and the compute side of the step-time model: neither reads z or G (memory-model.md
// §7–§9 and search-and-time.md §7.2–§7.5 take them only in the model states, the ZeRO/FSDP
// transients and the data-parallel communication).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "estimators/strategy.hpp"

namespace meshfit {

// Two keys equal, value by value: std::array's == calls memcmp for these, a library call per
// lookup on the scoring hot path; this loop the compiler unrolls.
template <std::size_t N>
bool same_key(const std::array<std::int64_t, N>& a, const std::array<std::int64_t, N>& b) {
  bool same = true;
  for (std::size_t i = 0; i < N; ++i) same = same && a[i] == b[i];
  return same;
}

template <class Entry>
class ZeroFreeMemo {
 public:
  // The entry for `s` under `context`, a token its owner changes whenever the model, run or
  // cluster may have changed (0: no memo, every call fresh). `fresh` is true when the caller must
  // fill the entry. Bounded: at most kMaxEntries per setting of everything but (z, G, recompute,
  // n_rc, b, m); the oldest are overwritten beyond that.
  Entry& find(std::uint64_t context, const Strategy& s, bool& fresh) {
    if (context == 0 || context != context_ || !same_node(s, node_)) {
      context_ = context;
      node_ = s;
      used_ = 0;
    }
    const Inner inner{static_cast<std::int64_t>(s.recompute), s.recompute_layers, s.micro_batch, s.num_microbatches};
    if (context != 0) {
      for (std::size_t i = used_; i-- > 0;) {
        if (same_key(keys_[i], inner)) {
          fresh = false;
          return entries_[i];
        }
      }
    }
    if (used_ == kMaxEntries) used_ = 0;
    if (used_ == entries_.size()) {
      entries_.emplace_back();
      keys_.emplace_back();
    }
    keys_[used_] = inner;
    fresh = true;
    return entries_[used_++];
  }

 private:
  using Inner = std::array<std::int64_t, 4>;  // recompute, n_rc, b, m
  static constexpr std::size_t kMaxEntries = 256;
  std::uint64_t context_ = 0;
  Strategy node_{};
  std::vector<Inner> keys_;
  std::vector<Entry> entries_;
  std::size_t used_ = 0;
};

}  // namespace meshfit
