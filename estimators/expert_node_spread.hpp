// How many nodes a token's routed experts span: what a dispatcher that sends each token once per
// destination node (DeepEP, HybridEP) moves across the NICs (layer_time.cpp, ep_time).
#pragma once

#include <cstdint>

#include "estimators/model.hpp"

namespace meshfit {

// The chance that a token's k experts all miss the node holding experts [first, first + held),
// under the model's routing with balanced (random) scores: the token picks T of the G equal,
// contiguous expert groups (Model::expert_groups, Model::groups_per_token), every T-subset alike,
// then k distinct experts among the T·E/G of those groups, every k-subset alike. Without group
// limit (G = T = 1) that is Π_{j<k} (E − held − j)/(E − j). Group-limited routing as Megatron-Core
// runs it (moe_utils.py, group_limited_topk: groups ranked by their top-(k/T) scores, then top-k
// inside the chosen groups; moe_router_force_load_balancing draws the scores at random, router.py),
// and as DeepSeek-V3 trains it (arXiv 2412.19437, §2.1.2 "node-limited routing": 8 groups, 4 per
// token, so a token reaches at most 4 nodes).
double node_miss_probability(const Model& m, std::int64_t first, std::int64_t held);

// The copies of one token that cross its rank's NIC in a node-deduplicated dispatch over `nodes`
// nodes, each holding E/nodes contiguous experts (EP ranks hold contiguous experts and fill the
// nodes in rank order): the other nodes holding at least one of its experts, averaged over the
// token's home node, (nodes − 1)/nodes · Σ_n (1 − miss_n). 0 on one node.
double remote_node_copies(const Model& m, std::int64_t nodes);

}  // namespace meshfit
