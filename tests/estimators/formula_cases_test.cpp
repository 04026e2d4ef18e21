// Every case of data/cases/formula_cases.yaml (published closed-form examples), computed with
// meshfit's own estimator functions and compared within the case's tolerance.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>

#include "engine/run_config.hpp"
#include "engine/yaml_fields.hpp"
#include "estimators/activation_census.hpp"
#include "estimators/in_flight.hpp"
#include "estimators/layer_activations.hpp"
#include "estimators/model_states.hpp"

using namespace meshfit;

namespace {

using Inputs = std::map<std::string, double>;
using Results = std::map<std::string, double>;  // name -> value in the expected unit

// Per-parameter model-state bytes under ZeRO stage z over nd ranks: 2 + 2 + K with K = 12
// (deepspeed_fp16), as meshfit's §6 computes it for one parameter.
double zero_bytes_per_param(int z, double nd) {
  RunFlags f;
  f.framework = "deepspeed";
  const Run run = make_run(f, false);
  Strategy s;
  s.dp = static_cast<std::int64_t>(nd);
  s.zero = nd > 1 ? z : 0;
  s.shard_group = nd > 1 && z >= 1 ? s.dp : 1;
  RankParams one;
  one.non_expert = 1;
  return model_states(one, zero_divisors(s, run), run, false, false).total();
}

Results zero_states(const Inputs& in) {
  const double psi = in.at("Psi"), nd = in.at("Nd");
  REQUIRE(in.at("K") == 12);
  return {{"baseline", psi * zero_bytes_per_param(0, nd) / 1e9},
          {"P_os", psi * zero_bytes_per_param(1, nd) / 1e9},
          {"P_os_g", psi * zero_bytes_per_param(2, nd) / 1e9},
          {"P_os_g_p", psi * zero_bytes_per_param(3, nd) / 1e9}};
}

Results zero_max_model(const Inputs& in) {
  const double mem = in.at("device_memory_gb") * 1e9, nd = in.at("Nd");
  return {{"max_params_P_os", mem / zero_bytes_per_param(1, nd)},
          {"max_params_P_os_g", mem / zero_bytes_per_param(2, nd)},
          {"max_params_P_os_g_p", mem / zero_bytes_per_param(3, nd)}};
}

Results gpt2_model_states(const Inputs& in) {
  RunFlags f;
  f.framework = "deepspeed";
  const Run run = make_run(f, false);
  RankParams p;
  p.non_expert = in.at("Psi");
  const ModelStates st = model_states(p, zero_divisors(Strategy{}, run), run, false, false);
  return {{"fp16_weights", st.weights / 1e9}, {"model_states", st.total() / 1e9}};
}

// A fused fp32 buffer over every parameter: the gradient bucket of §9.5 sized to all of them.
Results fused_buffer(const Inputs& in) {
  Run run = make_run(RunFlags{}, false);
  run.precision = load_precision("fp32");  // as --precision fp32 would (make_run's one use of it)
  return {{"fused_fp32_buffer", in.at("Psi") * run.precision.beta_G / 1e9}};
}

// A GPT-like layer (LayerNorm, GELU FFN of 4h, MHA, materialised attention with dropout), the
// setting of Korthikanti's Table 2 (memory-model.md §7.4.8).
Model gpt_layer(double heads, double hidden) {
  Model m;
  m.name = "gpt";
  m.hidden = static_cast<std::int64_t>(hidden);
  m.heads = static_cast<std::int64_t>(heads);
  m.kv_heads = m.heads;
  m.head_dim = m.hidden / m.heads;
  m.ffn = 4 * m.hidden;
  m.gated = false;
  m.norm = NormKind::layernorm;
  m.layers = 1;
  m.layer_ffn = {FfnKind::dense};
  m.attention_dropout = m.hidden_dropout = true;
  return m;
}

Results korthikanti_selective(const Inputs& in) {
  const Model m = gpt_layer(in.at("num_attention_heads"), in.at("hidden_size"));
  RunFlags f;
  f.seq = static_cast<std::int64_t>(in.at("seq_len"));
  f.global_batch = 1;
  f.no_flash_attention = true;
  const Run run = make_run(f, true);
  Strategy s;  // tp + sp over 8 ranks: the fraction does not depend on t
  s.tp = 8;
  s.sp = true;
  const Census c = analytic_census(m, run, s, FfnKind::dense);
  const double five_as = c.saved_tp[static_cast<std::size_t>(Op::softmax)];  // 5as bytes
  const CensusPerToken t = per_token(c, run, s, 0);
  return {{"five_a_s_over_h", five_as / static_cast<double>(m.hidden)},
          {"selective_recompute_activation_saving", (t.kept_plain - t.kept_sel) / t.kept_plain}};
}

// Pipeline output tensors of stage 0: one layer input (β_a·h per token, σ = 1) per micro-batch
// in flight under 1F1B (§8.1).
Results pipeline_outputs(const Inputs& in) {
  Strategy s;
  s.pp = static_cast<std::int64_t>(in.at("pp"));
  s.schedule = Schedule::one_f_one_b;
  s.num_microbatches = s.pp;
  const double n_cp = in.at("seq_len") * in.at("micro_batch_size");
  const double one = n_cp * in.at("bytes_per_element") * in.at("hidden_size");
  return {{"saving", in_flight(s, 0, {one}).peak / (1024.0 * 1024 * 1024)}};
}

Results ultrascale(const Inputs& in) {
  RunFlags f;
  f.framework = "deepspeed";  // bf16 params 2, bf16 grads 2, fp32 master 4, two fp32 moments
  Run run = make_run(f, false);
  REQUIRE(run.precision.beta_P == in.at("param_bytes"));
  REQUIRE(run.precision.beta_G == in.at("grad_bytes"));
  REQUIRE(run.precision.beta_master == in.at("master_weight_bytes"));
  REQUIRE(run.optimizer_states() * run.precision.beta_state == in.at("optimizer_state_bytes"));
  RankParams p;
  p.non_expert = in.at("num_params");
  const double plain = model_states(p, ZeroDivisors{}, run, false, false).total();
  run.precision.beta_G += in.at("fp32_grad_accum_bytes");  // a second, fp32 accumulation buffer
  const double accum = model_states(p, ZeroDivisors{}, run, false, false).total();
  return {{"model_states", plain / 1e9}, {"model_states_with_fp32_grad_accum", accum / 1e9}};
}

std::function<Results(const Inputs&)> handler(const std::string& id) {
  if (id == "zero-sec5.4-max-model-size-nd64") return zero_max_model;
  if (id == "zero-sec3.1-gpt2-1.5b-model-states") return gpt2_model_states;
  if (id.rfind("zero-buffers", 0) == 0) return fused_buffer;
  if (id.rfind("zero-fig1", 0) == 0 || id.rfind("zero-table1", 0) == 0) return zero_states;
  if (id.rfind("korthikanti-sec5", 0) == 0) return korthikanti_selective;
  if (id == "korthikanti-appB-530b-pipeline-output-dealloc") return pipeline_outputs;
  if (id.rfind("ultrascale-model-states", 0) == 0) return ultrascale;
  return nullptr;
}

// Cases meshfit deliberately does not reproduce, with the reason (reported in the issue note).
const std::map<std::string, std::string> kNotReproduced = {
    {"zero-sec3.2-gpt2-1.5b-activations",
     "ZeRO's '12·h·b·s·L elements' is a rough estimate; meshfit prices activations with "
     "Korthikanti's per-op census (34h + 5as bytes per token per layer), which the "
     "korthikanti-* cases check"}};

}  // namespace

TEST_CASE("formula_cases.yaml: every published closed-form example") {
  const std::string path = std::string(MESHFIT_DATA_DIR) + "/cases/formula_cases.yaml";
  REQUIRE_MESSAGE(std::filesystem::exists(path), "missing " << path);
  const YAML::Node cases = load_yaml_file(path);
  int checked = 0;
  for (const auto& c : cases) {
    const std::string id = c["id"].as<std::string>();
    CAPTURE(id);
    if (kNotReproduced.count(id)) continue;
    const auto h = handler(id);
    REQUIRE_MESSAGE(h, "no handler for formula case " << id);
    Inputs in;
    for (const auto& kv : c["inputs"]) in[kv.first.as<std::string>()] = kv.second.as<double>();
    const Results got = h(in);
    const double tol = c["tolerance"].as<double>();
    for (const auto& kv : c["expected"]) {
      const std::string name = kv.first.as<std::string>();
      CAPTURE(name);
      REQUIRE(got.count(name));
      const double want = kv.second["value"].as<double>();
      CHECK(std::fabs(got.at(name) - want) / want <= tol);
      ++checked;
    }
  }
  CHECK(checked >= 30);
}
