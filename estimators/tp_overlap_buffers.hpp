// The communication buffers that TP communication overlap keeps on the device for the whole run
// (the strategy's tp_comm_overlap; docs/spec/memory-model.md §11, O_tpo). Both frameworks allocate
// them outside PyTorch's caching allocator, so they count in M_device and not in M_reserved.
#pragma once

#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// O_tpo in bytes per rank; 0 without tp_comm_overlap. With n = b·s/cp tokens of a micro-batch:
//  - Megatron (Transformer Engine's userbuffers, transformer_engine/pytorch/module/base.py
//    initialize_ub, called by megatron/training/initialize.py with the shape [s·b/cp, h]): twelve
//    communicators (qkv, proj, fc1, fc2 × fprop, dgrad, wgrad), each with a buffer of n·h
//    elements (comm_gemm_overlap.cpp: a ring-exchange all-gather holds tp chunks of n/tp rows).
//    The eight that feed a GEMM's all-gathered input hold FP8 bytes under FP8, the other four
//    bf16: n·h·(8·β_ag + 4·2), β_ag = 1 with FP8 linears, else 2.
//  - torchtitan (AsyncTP, torch/distributed/_symmetric_memory/__init__.py): one symmetric-memory
//    workspace per TP group, grown to the largest request; the fused matmul-reduce-scatter asks
//    for two output chunks, 2·(n/tp)·h·β_a, above the all-gather's one input shard.
double tp_overlap_buffer_bytes(const Model& m, const Run& run, const Strategy& s);

}  // namespace meshfit
