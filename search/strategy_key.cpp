#include "search/strategy_key.hpp"

#include <cstdint>
#include <limits>
#include <tuple>

namespace meshfit {

namespace {
auto key(const Strategy& s) {
  const std::int64_t layers = s.recompute_layers == 0 ? std::numeric_limits<std::int64_t>::max() : s.recompute_layers;
  return std::make_tuple(s.tp, s.sp, s.tp_comm_overlap, s.cp, static_cast<int>(s.cp_algo), s.cp_u, s.pp, s.vpp,
                         static_cast<int>(s.schedule), s.ep, s.etp, s.dp, s.zero, s.shard_group,
                         static_cast<int>(s.offload), static_cast<int>(s.recompute), layers, s.micro_batch);
}
}  // namespace

bool key_less(const Strategy& a, const Strategy& b) { return key(a) < key(b); }

}  // namespace meshfit
