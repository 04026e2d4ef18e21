#include "estimators/overheads.hpp"

namespace meshfit {

std::int64_t communicator_count(const Strategy& s, bool model_has_moe, const StageGroups& g) {
  std::int64_t n = 0;
  const std::int64_t dpcp = s.dp * s.cp;
  n += s.tp > 1;
  n += s.cp > 1;
  n += dpcp > 1;                                                  // gradient reduction / ZeRO shards
  n += s.zero >= 1 && s.shard_group < dpcp && dpcp / s.shard_group > 1;  // HSDP replicate group
  if (model_has_moe) {
    n += s.ep > 1;
    n += g.has_moe && s.expert_dp() > 1;  // expert data parallel, on stages with MoE layers (ruling 4)
    n += s.etp > 1 && s.etp != s.tp;
  }
  n += s.pp > 1;
  n += g.embedding_group;
  return n;
}

}  // namespace meshfit
