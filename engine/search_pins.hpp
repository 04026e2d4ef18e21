// The pins and policy switches of `meshfit search`'s command line (docs/spec/cli.md, "search"):
// one text per flag, read into the search space's pins (search-and-time.md §2.3) and policies.
#pragma once

#include <string>

#include "engine/cli_options.hpp"
#include "search/policies.hpp"
#include "search/search_space.hpp"

namespace meshfit {

struct PinFlags {
  std::string tp, cp, pp, vpp, ep, etp, zero, shard_group, mbs, sp, cp_algo, schedule, recompute, offload,
      tp_comm_overlap, policies;
};

void add_pin_options(po::options_description& desc, PinFlags& flags);
// The flags given (non-empty) replace the pins of their dimension and switch the policies named;
// an InputError names the flag and what it expected.
void apply_pin_flags(const PinFlags& flags, Pins& pins, PolicySet& policies);

}  // namespace meshfit
