#include "estimators/sapp_nd_tables.hpp"

#include "estimators/sapp_nd_rules.hpp"
#include "estimators/seed_conventions.hpp"

namespace meshfit::sapp_nd {

namespace {

// `elements` priced with parameters and optimizer state over `os_shard`, gradients over `g_shard`.
ModelStates priced(double elements, double os_shard, double g_shard, const Run& run) {
  ModelStates st;
  st.weights = run.precision.beta_P * elements / os_shard;
  st.optimizer_elements = elements / os_shard;
  st.optimizer = run.options.offload_optimizer ? 0 : run.beta_opt() * elements / os_shard;
  st.grads = run.precision.beta_G * elements / g_shard;
  st.unsharded_elements = elements;
  return st;
}

}  // namespace

TableStates table_states(const Model& m, const Run& run, const Strategy& s) {
  const Factors f = factors(m, s, seed_rule(run, SeedConvention::expert_tp_literal));
  const double h = static_cast<double>(m.hidden), v = static_cast<double>(m.vocab);
  const double cp = static_cast<double>(s.cp);
  TableStates t;
  // EvalHead.num_params_embed = h·v, divided by shard_embed (CostModelParserMindformers.
  // config_shard_emb: dp with vocab_emb_dp and pp = 1, else tp·dp) and by cp; none when tied.
  const double shard_embed = static_cast<double>(s.pp == 1 ? s.dp : s.tp * s.dp) * cp;
  if (!m.tie) t.embedding = priced(h * v, shard_embed, shard_embed, run);
  // EvalTail.num_params_output = h·v + v, over shard_p_os_non_exp_partial and shard_grad_non_exp.
  t.output = priced(h * v + v, f.os_ne, f.g_ne, run);
  // EvalMTP.num_params_mtp = 2h² + 4h (eh_proj and norms), sharded like the output
  // (is_shard_mtp_param), and the embedding node's states once more per depth.
  t.mtp_extra = priced(2 * h * h + 4 * h, f.os_ne, f.g_ne, run);
  t.mtp_extra += priced(h * v, shard_embed, shard_embed, run);
  return t;
}

}  // namespace meshfit::sapp_nd
