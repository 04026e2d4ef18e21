// Megatron-LM launch arguments for a strategy (megatron/training/arguments.py's flag names:
// --tensor-model-parallel-size, --pipeline-model-parallel-size,
// --num-layers-per-virtual-pipeline-stage, --context-parallel-size, --cp-comm-type,
// --pipeline-model-parallel-layout, --hierarchical-context-parallel-sizes, --expert-model-parallel-size,
// --expert-tensor-parallel-size, --sequence-parallel, --tp-comm-overlap, --use-distributed-optimizer,
// --num-distributed-optimizer-instances, --use-megatron-fsdp with
// --data-parallel-sharding-strategy, --recompute-granularity/-method/-num-layers,
// --micro-batch-size, --global-batch-size). Data parallelism is what the world size leaves:
// Megatron derives it, so no flag.
#include <sstream>

#include "engine/trainer_export.hpp"
#include "estimators/pipeline_layout.hpp"
#include "search/trainer_targets.hpp"

namespace meshfit {

namespace {

std::string layer_split_error(const std::string& why) { return "megatron cannot express this strategy: " + why; }

// --pipeline-model-parallel-layout (megatron/core/transformer/pipeline_parallel_layer_layout.py):
// one segment per virtual stage in virtual-stage order (u = chunk·pp + rank, as meshfit's layout),
// separated by '|': 'E' the embedding, 't' a decoder layer ("t*3" for three), 'm' an MTP depth,
// 'L' the loss. DeepSeek-V3 on pp 16 x vpp 2 is Megatron's own example ("Et*3|(tt|)*29,m|L").
std::string pipeline_layout_flag(const Model& m, const PipelineLayout& layout) {
  std::string out;
  const std::size_t nv = layout.vstages.size();
  for (std::size_t u = 0; u < nv; ++u) {
    if (u > 0) out += '|';
    if (u == 0) out += 'E';
    const std::int64_t n = layout.vstages[u].layers;
    if (n == 1) out += 't';
    if (n > 1) out += "t*" + std::to_string(n);
    if (u + 1 == nv) out += std::string(static_cast<std::size_t>(m.mtp_depths), 'm') + "L";
  }
  return out;
}

}  // namespace

TrainerConfig megatron_args(const Model& m, const Run& run, const Strategy& s) {
  if (const auto why = trainer_refusal(Framework::megatron, m, run, s)) throw ExportError(layer_split_error(*why));
  const RunOptions& o = run.options;
  std::vector<std::string> a;
  auto flag = [&](const std::string& name, std::int64_t value) { a.push_back(name + " " + std::to_string(value)); };
  flag("--tensor-model-parallel-size", s.tp);
  if (s.sp && s.tp > 1) a.push_back("--sequence-parallel");
  // Transformer Engine's userbuffers GEMM overlap (initialize.py's _initialize_tp_communicators);
  // arguments.py asserts --sequence-parallel with it.
  if (s.tp_comm_overlap) a.push_back("--tp-comm-overlap");
  flag("--pipeline-model-parallel-size", s.pp);
  // Megatron splits the layers evenly over pp·vpp virtual stages (first/last-stage counts aside);
  // any other split meshfit estimated — an uneven one, or a per-virtual-stage list — is exported
  // as the layout itself.
  const bool uneven = s.pp > 1 && (m.layers % (s.pp * s.vpp) != 0 || !o.layers_per_vstage.empty()) &&
                      o.layers_first_stage == 0 && o.layers_last_stage == 0;
  if (uneven) {
    a.push_back("--pipeline-model-parallel-layout \"" + pipeline_layout_flag(m, make_layout(m, run, s)) + "\"");
  } else {
    if (o.layers_first_stage > 0) flag("--decoder-first-pipeline-num-layers", o.layers_first_stage);
    if (o.layers_last_stage > 0) flag("--decoder-last-pipeline-num-layers", o.layers_last_stage);
    if (o.account_embedding) a.push_back("--account-for-embedding-in-pipeline-split");
    if (o.account_loss) a.push_back("--account-for-loss-in-pipeline-split");
    if (s.pp > 1 && s.vpp > 1) {
      const std::int64_t slots = m.layers + (o.account_embedding ? 1 : 0) + (o.account_loss ? 1 : 0);
      const bool even = o.layers_first_stage == 0 && o.layers_last_stage == 0 && slots % (s.pp * s.vpp) == 0 &&
                        !o.account_embedding && !o.account_loss;
      if (even) {
        flag("--num-layers-per-virtual-pipeline-stage", m.layers / (s.pp * s.vpp));
      } else {
        flag("--num-virtual-stages-per-pipeline-rank", s.vpp);
      }
    }
  }
  if (s.cp > 1) {
    flag("--context-parallel-size", s.cp);
    switch (s.cp_algo) {
      case CpAlgo::ring: a.push_back("--cp-comm-type p2p"); break;
      case CpAlgo::ulysses: a.push_back("--cp-comm-type a2a"); break;
      case CpAlgo::allgather: a.push_back("--cp-comm-type allgather"); break;
      case CpAlgo::hybrid:
        a.push_back("--cp-comm-type a2a+p2p");
        a.push_back("--hierarchical-context-parallel-sizes " + std::to_string(s.cp_u) + " " +
                    std::to_string(s.cp_ring()));
        break;
      case CpAlgo::none: break;
    }
  }
  if (m.is_moe()) {
    flag("--expert-model-parallel-size", s.ep);
    flag("--expert-tensor-parallel-size", s.etp);
  }
  const std::int64_t replicas = s.zero >= 1 ? s.dp * s.cp / s.shard_group : 1;
  switch (s.zero) {
    case 0: break;
    case 1:
      a.push_back("--use-distributed-optimizer");
      if (replicas > 1) flag("--num-distributed-optimizer-instances", replicas);
      break;
    default:  // one shard group over dp·cp and pp = 1: trainer_refusal
      a.push_back("--use-megatron-fsdp");
      a.push_back(std::string("--data-parallel-sharding-strategy ") +
                  (s.zero == 2 ? "optim_grads" : "optim_grads_params"));
  }
  if (s.offload == Offload::optimizer) {
    // HybridDeviceOptimizer: the distributed optimizer's shard stepped on the CPU, all of it
    // (the fraction's default 1.0 written out); arguments.py requires the precision-aware optimizer.
    a.push_back("--optimizer-cpu-offload");
    a.push_back("--optimizer-offload-fraction 1.0");
    a.push_back("--use-precision-aware-optimizer");
  } else if (o.precision_aware_optimizer) {
    a.push_back("--use-precision-aware-optimizer");
  }
  if (s.recompute == Recompute::selective) {
    a.push_back("--recompute-granularity selective");
  } else if (s.recompute == Recompute::full) {
    a.push_back("--recompute-granularity full");
    if (s.recompute_layers == 0) {  // every layer: each layer's input checkpointed
      a.push_back("--recompute-method uniform");
      flag("--recompute-num-layers", 1);
    } else {
      // Megatron recomputes the first n layers of every model chunk (block method), the layout
      // of memory-model.md §5.4 when n_rc spreads evenly over the chunks (trainer_refusal).
      a.push_back("--recompute-method block");
      flag("--recompute-num-layers", s.recompute_layers / s.vpp);
    }
  }
  flag("--micro-batch-size", s.micro_batch);
  flag("--global-batch-size", run.global_batch);
  flag("--seq-length", run.seq);
  if (const std::string half = half_precision(run); !half.empty()) a.push_back("--" + half);
  // Transformer Engine's FP8 linears: E4M3 forward, E5M2 gradients (the "hybrid" format).
  if (run.options.fp8_linears) a.push_back("--fp8-format hybrid");
  // The FP8 weights the estimate kept instead of bf16 ones beside their FP8 copies (§6.2).
  if (run.options.fp8_linears && run.options.fp8_param_gather) a.push_back("--fp8-param-gather");

  std::ostringstream out;
  out << "# " << kMegatronVersion << " arguments (megatron/training/arguments.py)\n";
  for (std::size_t i = 0; i < a.size(); ++i) out << a[i] << (i + 1 < a.size() ? " \\\n" : "\n");
  TrainerConfig r;
  r.text = out.str();
  if (s.recompute == Recompute::full && s.recompute_layers > 0 && o.recompute_rest == Recompute::selective) {
    r.notes.push_back(
        "the layers beyond the fully recomputed ones use selective recompute in meshfit's estimate; "
        "Megatron-LM takes one granularity, so they run without recompute there");
  }
  // Megatron-LM's arguments reject Transformer Engine's cross-entropy since June 2026 ("stability
  // issues", arguments.py, #5115/#5162); Megatron-Bridge still sets it through Megatron-Core.
  if (o.te_cross_entropy) {
    r.notes.push_back(
        "the estimate takes Transformer Engine's fused cross-entropy (te_cross_entropy), which Megatron-LM's "
        "arguments reject; these arguments run its unfused loss, which holds more memory on the last stage");
  }
  // FP8 attention is a TransformerConfig field Megatron-LM's arguments leave without a flag
  // (arguments.py lists fp8_dot_product_attention among the fields with no CLI argument);
  // Megatron-Bridge sets it in its mixed-precision config.
  if (o.fp8_attention) {
    r.notes.push_back(
        "the estimate runs the attention core in FP8 (fp8_attention), which Megatron-LM's arguments cannot "
        "set (TransformerConfig.fp8_dot_product_attention has no flag; Megatron-Bridge's mixed-precision "
        "config sets it); these arguments run it in bf16");
  }
  return r;
}

}  // namespace meshfit
