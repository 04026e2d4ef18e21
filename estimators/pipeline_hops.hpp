// The pipeline's point-to-point time per micro-batch on a stage (docs/spec/search-and-time.md
// §7.5, §7.6): each virtual stage sends its activations forward and receives their gradient back.
// One term, read by the step-time model and its plain reference alike.
#pragma once

#include "estimators/device.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// Whether the hops hide behind compute: the run option pp_overlap; DualPipeV's pairing unless
// dualpipe_overlap is off; and an interleaved schedule under a framework that overlaps its P2P
// there by default (FrameworkProfile::interleaved_p2p_overlap: Megatron-LM's
// --overlap-p2p-communication, on unless --no-overlap-p2p-communication, and forced off without
// virtual stages; megatron/training/arguments.py).
bool pipeline_hops_hidden(const Run& run, const Strategy& s);

// 2·vpp hops of b·(s/cp)·h/σ activations, inside a node only if the whole pipeline group is; 0
// without PP or when hidden.
double pipeline_hop_time(const Model& m, const Run& run, const Device& d, const Strategy& s);

}  // namespace meshfit
