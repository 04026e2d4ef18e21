#include "engine/memory_terms.hpp"

namespace meshfit {

std::vector<std::pair<std::string, double>> stage_terms(const StageMemory& st) {
  // When the optimizer step sets M_alloc, the activations are gone and its transient stands.
  const double act = st.step_phase_binds ? 0 : st.activations;
  const double tr = st.step_phase_binds ? st.step_transient : st.transient;
  std::vector<std::pair<std::string, double>> terms{{"weights", st.weights},
                                                    {"grads", st.grads},
                                                    {"optimizer", st.optimizer},
                                                    {"gathered_params", st.gathered},
                                                    {"fp8_cache", st.fp8_cache},
                                                    {"deferred_grads", st.step_phase_binds ? 0 : st.deferred_grads},
                                                    {"activations", act},
                                                    {"transient", tr},
                                                    {"fragmentation", st.fragmentation()},
                                                    {"cuda_context", st.cuda_context},
                                                    {"communicators", st.communicator_buffers},
                                                    {"workspaces", st.workspaces},
                                                    {"ep_library", st.ep_library},
                                                    {"fixed_margin", st.fixed_margin}};
  // --rules sapp-nd's resident communication buffers (memory-model.md §17.5.1), only when priced.
  if (st.seed_comm > 0) terms.insert(terms.begin() + 8, {"comm_buffers", st.step_phase_binds ? 0 : st.seed_comm});
  // PyTorch pipelining's buffers (memory-model.md §8.6), held in both phases, only when priced.
  if (st.pipeline_buffers > 0) terms.insert(terms.begin() + 6, {"pipeline_buffers", st.pipeline_buffers});
  // TP communication overlap's buffers outside the allocator (memory-model.md §11), only when priced.
  if (st.tp_overlap_buffers > 0) terms.emplace_back("tp_overlap_buffers", st.tp_overlap_buffers);
  return terms;
}

std::pair<std::string, double> dominant_term(const StageMemory& st) {
  std::pair<std::string, double> best{"", -1};
  for (const auto& t : stage_terms(st)) {
    if (t.second > best.second) best = t;
  }
  return best;
}

}  // namespace meshfit
