// Parameter counts against the published totals and the per-layer values of
// docs/spec/memory-model.md §4.10 (computed there by hand from §4.2–§4.8).
#include <doctest/doctest.h>

#include "engine/model_config.hpp"
#include "estimators/parameter_counts.hpp"
#include "test_support.hpp"

using namespace meshfit;

namespace {
std::int64_t total_of(const std::string& spec) { return model_params(load_model(spec)).main_total(); }
}  // namespace

TEST_CASE("bundled presets match their published parameter totals") {
  CHECK(total_of("llama-3.1-8b") == 8'030'261'248);
  CHECK(total_of("llama-3.1-70b") == 70'553'706'496);
  CHECK(total_of("mixtral-8x7b") == 46'702'792'704);
  CHECK(total_of("qwen3-30b-a3b") == 30'532'122'624);
  CHECK(total_of("deepseek-v3") == 671'026'419'200);
}

TEST_CASE("Llama-3.1-8B per-layer split (§4.10)") {
  const Model m = load_model("llama-3.1-8b");
  const LayerParams p = layer_params(m, FfnKind::dense, m.kv_heads);
  CHECK(p.total() == 218'112'000);
  CHECK(p.attention() == 41'943'040);
  CHECK(p.dense_split == 176'160'768);
  CHECK(p.norms == 8'192);
  const ModelParams t = model_params(m);
  CHECK(t.embedding == 525'336'576);
  CHECK(t.output == 525'336'576);
  CHECK(t.final_norm == 4'096);
}

TEST_CASE("Llama-3.1-70B layer") {
  const Model m = load_model("llama-3.1-70b");
  CHECK(layer_params(m, FfnKind::dense, m.kv_heads).total() == 855'654'400);
}

TEST_CASE("Mixtral-8x7B MoE layer parts (§4.10)") {
  const Model m = load_model("mixtral-8x7b");
  const LayerParams p = layer_params(m, FfnKind::moe, m.kv_heads);
  CHECK(p.total() == 1'451'270'144);
  CHECK(p.attention() == 41'943'040);
  CHECK(p.routed == 1'409'286'144);
  CHECK(p.router == 32'768);
  CHECK(p.norms == 8'192);
}

TEST_CASE("DeepSeek-V3 MLA and MoE parts, MTP, checkpoint and activated counts (§4.10)") {
  const Model m = load_model("deepseek-v3");
  CHECK(m.moe_layer_count() == 58);
  const LayerParams moe = layer_params(m, FfnKind::moe, m.kv_heads);
  CHECK(moe.attention() == 187'107'328);
  CHECK(moe.total() == 11'507'286'272);
  CHECK(moe.non_expert_split() == 171'966'464);
  CHECK(moe.non_expert_repl() == 16'990'464);
  CHECK(moe.routed == 11'274'289'152);
  CHECK(moe.shared_split == 44'040'192);
  CHECK(layer_params(m, FfnKind::dense, m.kv_heads).total() == 583'483'392);
  const ModelParams t = model_params(m);
  CHECK(t.mtp == 11'610'068'224);
  CHECK(t.total_with_mtp() == 682'636'487'424);
  CHECK(t.checkpoint_total() == 684'489'845'504);
  CHECK(t.activated == 37'552'297'472);
}

TEST_CASE("other families of §4.10, read from their config.json") {
  CHECK(total_of(test::data_path("models/mistral-7b-v0.1.json")) == 7'241'732'096);
  CHECK(total_of(test::data_path("models/qwen2-7b.json")) == 7'615'616'512);
  CHECK(total_of(test::data_path("models/qwen3-8b.json")) == 8'190'735'360);
  CHECK(total_of(test::data_path("models/deepseek-v2-lite.json")) == 15'706'484'224);
  CHECK(total_of(test::data_path("models/gpt2.json")) == 124'439'808);
  // Megatron GPT-3 20B (NeMo's GPT3-20B, model_type gpt), by hand: per layer 4h² + 4h (QKV and
  // output with biases) + 2hf + f + h (the GeLU MLP with biases) + 4h (two LayerNorms) =
  // 453,064,704 with h = 6,144, f = 24,576; × 44 layers, + the tied table 50,257·h = 308,779,008,
  // + 2,048 learned positions·h = 12,582,912, + the final LayerNorm 2h: 20,256,221,184.
  CHECK(total_of(test::data_path("models/gpt3-20b-megatron.json")) == 20'256'221'184);
  // Nemotron-4 340B (model_type nemotron): per layer q and o 2·h², K and V 2·h·8·192, the
  // squared-ReLU MLP 2hf, two LayerNorm1P 4h = 3,454,083,072 with h = 18,432, f = 73,728;
  // × 96, + the untied tables 2·256,000·h = 9,437,184,000, + the final norm 2h: 341,029,195,776.
  CHECK(total_of(test::data_path("models/nemotron-4-340b.json")) == 341'029'195'776);

  const Model qwen2 = load_model(test::data_path("models/qwen2-7b.json"));
  CHECK(layer_params(qwen2, FfnKind::dense, qwen2.kv_heads).total() == 233'057'792);
  const Model qwen3 = load_model(test::data_path("models/qwen3-8b.json"));
  CHECK(layer_params(qwen3, FfnKind::dense, qwen3.kv_heads).total() == 192'946'432);
  const Model gpt2 = load_model(test::data_path("models/gpt2.json"));
  CHECK(layer_params(gpt2, FfnKind::dense, gpt2.kv_heads).total() == 7'087'872);
  const Model q30 = load_model("qwen3-30b-a3b");
  CHECK(layer_params(q30, FfnKind::moe, q30.kv_heads).total() == 623'120'640);
}

TEST_CASE("K/V heads replicated over TP count once per TP rank (§4.2)") {
  // Llama-3.1-70B at tp 16 holds max(8, 16) = 16 K/V heads over the TP group: each of the 8 is
  // stored twice, adding 2·h·8·d_h = 16,777,216 parameters to the split part.
  const Model m = load_model("llama-3.1-70b");
  const LayerParams at8 = layer_params(m, FfnKind::dense, 8);
  const LayerParams at16 = layer_params(m, FfnKind::dense, 16);
  CHECK(at16.attention_split - at8.attention_split == 2 * 8192 * 8 * 128);
}
