// The parallel degrees and batch split of a validation case whose source left some of them null
// (data/validation/README.md: "a tool applies the framework's default for them and says so").
// Two identities hold for every case, world_size = dp·tp·pp·cp and global batch = dp·b·m, so a
// null the identities fix is derived from the stated fields; only what they leave open takes the
// framework's default. Each choice is noted as the case's defaults list shows it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meshfit {

struct CaseLayoutInput {
  std::string framework;  // torchtitan, megatron, deepspeed, ...
  std::int64_t world = 1;
  std::optional<std::int64_t> dp, tp, pp, cp;
  std::optional<std::int64_t> global_batch, micro_batch, num_microbatches;
};

struct CaseLayout {
  std::int64_t dp = 1, tp = 1, pp = 1, cp = 1;
  std::int64_t global_batch = 1, micro_batch = 1, num_microbatches = 1;
};

// What the identities cannot settle: the field (as the case names it, e.g. "strategy.dp") and why.
struct CaseLayoutGap {
  std::string field, reason;
  bool not_stated = false;  // the source left out what the estimate needs (the case is listed, not estimated)
};

// The degrees, then the batch:
//  - tp, pp, cp: a null one is world/(the product of the rest) when it is the only null among dp,
//    tp, pp, cp; otherwise 1, every framework's default. A null dp is world/(tp·pp·cp).
//  - global batch: dp·b·m when b and m are stated; dp·b with m null and no pipeline (one
//    micro-batch: the local batch); otherwise not stated.
//  - micro-batch b: gb/(dp·m) when m is stated; torchtitan without pipeline runs its local batch
//    as one micro-batch, gb/dp; otherwise 1 (Megatron's, NeMo's and torchtitan's pipeline
//    micro-batch default).
//  - m: gb/(dp·b).
// Returns the gap instead where the stated fields contradict the identities or leave the batch open.
struct CaseLayoutResult {
  CaseLayout layout;
  std::optional<CaseLayoutGap> gap;
};
CaseLayoutResult resolve_case_layout(const CaseLayoutInput& in, std::vector<std::string>& notes);

}  // namespace meshfit
