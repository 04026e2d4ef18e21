// Time of one layer for one micro-batch on one device: kernel times (search-and-time.md §7.3),
// recompute (§7.2) and exposed TP, CP and EP communication (§7.5, §7.6).
#pragma once

#include "estimators/device.hpp"
#include "estimators/layer_flops.hpp"
#include "estimators/model.hpp"
#include "estimators/run.hpp"
#include "estimators/strategy.hpp"

namespace meshfit {

// t_kern(F) = F/(η_max·η_fw·F_peak) + τ_kern/(η_max·η_fw): the peak rate plus a fixed cost per
// kernel (§7.3); 0 for no work.
double kernel_time(const Device& d, double eta_fw, double flops);

// The efficiency scales (on η_max) of a run's kernels: GEMMs of the body's linear layers, the
// attention core, and other GEMMs (logits, router of the output side), from the framework profile
// and the run's kernel features.
struct KernelScales {
  double linear = 1, core = 1, other = 1;
};
KernelScales kernel_scales(const Run& run, const Device& d, const Strategy& s);

struct LayerTime {
  double forward = 0, backward = 0, weight_grad = 0;  // compute (elementwise time included)
  double core_forward = 0;                            // the attention core's forward kernel
  double experts_forward = 0;                         // the routed experts' grouped GEMMs, forward
  double recompute[3] = {0, 0, 0};                    // compute added per recompute mode
  // Exposed communication, forward + backward, and the forward part a recompute repeats.
  double tp = 0, cp = 0, ep = 0;
  double tp_forward = 0, cp_forward = 0, ep_forward = 0;
  // The EP time (collectives and the host's idle) that the EP overlap hides in one micro-batch,
  // forward and backward together: what a micro-batch run without a partner exposes again
  // (pipeline_schedule.hpp, ep_overlap_unpaired).
  double ep_hidden = 0;
  double tp_recompute[3] = {0, 0, 0};                    // TP communication each recompute mode repeats
  bool recompute_repeats_cp[3] = {false, false, false};  // selective sets that recompute the core
  // The forward GEMMs that read or write each SP collective's tensor, which a decomposed overlap
  // can hide that collective behind (tp_time): the attention's input projections (after the
  // all-gather) and output projection (before the reduce-scatter), then the FFN's (dense, or the
  // shared expert's) first and second.
  double tp_pair_gemm[4] = {0, 0, 0, 0};
};

// The loss's memory-bound time for one micro-batch on one device (§7.3): the profile's bytes per
// logit element over the rank's b·s/cp tokens × V_pad/tp vocabulary entries, at η_hbm·B_hbm.
struct LossTime {
  double forward = 0, backward = 0;
};
LossTime loss_time(const Run& run, const Device& device, const Strategy& s, double v_pad);

// HBM bytes of one routed-expert grouped GEMM on one device (`up`: n_up·f_e wide; else down back
// to h): its local experts' weights, E/(ep·etp) of them (one byte each under FP8 linears), and its
// share of the routed rows in and out. With few tokens per expert the weights outweigh the rows
// and the GEMM waits on HBM rather than on the tensor cores: each of its kernels takes the
// roofline's max of compute and memory time (torchao testing/training/roofline_utils.py,
// get_individual_gemm_time_sympy).
double expert_gemm_bytes(const Model& m, const Run& run, const Strategy& s, bool up, double rho);

// The split exchange of a dropless all-to-all dispatch: before the token all-to-all each rank must
// learn how many tokens every other rank sends it, as one int64 count per expert. Megatron's
// alltoall dispatcher all-gathers each rank's E counts over the ETP×EP group
// (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher.preprocess:
// gather_from_sequence_parallel_region of num_local_tokens_per_expert, skipped when drop-and-pad
// fixes the counts); torchtitan all-to-alls them over the EP group (torchtitan/models/common/
// token_dispatcher.py, _token_count_exchange). A few kilobytes: the collective's latency steps.
// Forward only, as the backward reuses the splits. 0 for DeepEP and HybridEP, whose kernels count
// for themselves (layer_time prices HybridEP's routing-map all-gather), and for DeepSpeed, whose
// capacity all-to-all has fixed splits.
double split_exchange_time(const Model& m, const Run& run, const Device& d, const Strategy& s);

// One body layer of FFN flavour `ffn` under strategy `s` (on `device`, for `run`).
LayerTime layer_time(const Model& m, const Run& run, const Device& device, const Strategy& s, FfnKind ffn);

}  // namespace meshfit
