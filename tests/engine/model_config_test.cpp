// Reading models: the family mapping of docs/spec/memory-model.md §2.1.2, the model YAML, and
// every bad input of issue 2 with its message.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "engine/input_error.hpp"
#include "engine/model_config.hpp"
#include "engine/validation_cases.hpp"
#include "engine/validation_summary.hpp"
#include "engine/yaml_fields.hpp"
#include "estimators/parameter_counts.hpp"
#include "search/evaluator/memory_evaluator.hpp"
#include "test_support.hpp"

using namespace meshfit;

namespace {
// The message of the InputError that loading `spec` throws ("" if none).
std::string error_of(const std::string& spec) {
  try {
    load_model(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("presets are found case-insensitively") {
  CHECK(load_model("Llama-3.1-8B").name == "llama-3.1-8b");
  CHECK(load_model("DEEPSEEK-V3").attention == AttentionKind::mla);
}

TEST_CASE("family facts") {
  const Model mixtral = load_model("mixtral-8x7b");
  CHECK(mixtral.moe_layer_count() == 32);
  CHECK(mixtral.expert_ffn == 14336);
  CHECK(mixtral.top_k == 2);

  const Model ds = load_model("deepseek-v3");
  CHECK(ds.first_dense == 3);
  CHECK(ds.layer_ffn[2] == FfnKind::dense);
  CHECK(ds.layer_ffn[3] == FfnKind::moe);
  CHECK(ds.router_bias);  // topk_method noaux_tc
  CHECK(ds.kv_heads == 128);
  CHECK(ds.mtp_depths == 1);
  CHECK(ds.shared_expert_ffn == 2048);
  CHECK(ds.expert_groups == 8);  // n_group: node-limited routing, 4 groups a token
  CHECK(ds.groups_per_token == 4);

  const Model v2 = load_model(test::data_path("models/deepseek-v2-lite.json"));
  CHECK(v2.q_lora_rank == 0);  // null -> no query latent
  CHECK_FALSE(v2.router_bias);
  CHECK(v2.expert_groups == 1);  // topk_method greedy: no group limit

  const Model qwen2 = load_model(test::data_path("models/qwen2-7b.json"));
  CHECK(qwen2.qkv_bias);
  CHECK_FALSE(qwen2.o_bias);

  const Model qwen3 = load_model("qwen3-32b");
  CHECK(qwen3.qk_norm);
  CHECK(qwen3.head_dim == 128);

  const Model gpt3 = load_model(test::data_path("models/gpt3-20b-megatron.json"));
  CHECK(gpt3.tie);
  CHECK(!gpt3.gated);
  CHECK(gpt3.norm == NormKind::layernorm);
  CHECK((gpt3.qkv_bias && gpt3.o_bias && gpt3.mlp_bias));
  CHECK(gpt3.positions == 2048);
  const Model nemotron = load_model(test::data_path("models/nemotron-4-340b.json"));
  CHECK(!nemotron.tie);
  CHECK(!nemotron.gated);
  CHECK(nemotron.norm == NormKind::layernorm);
  CHECK(!(nemotron.qkv_bias || nemotron.o_bias || nemotron.mlp_bias));
  CHECK(nemotron.kv_heads == 8);
  const Model gpt2 = load_model(test::data_path("models/gpt2.json"));
  CHECK(gpt2.tie);
  CHECK(gpt2.norm == NormKind::layernorm);
  CHECK(gpt2.ffn == 4 * 768);
  CHECK(gpt2.positions == 1024);
  CHECK(gpt2.attention_dropout);
  CHECK(gpt2.hidden_dropout);
  CHECK(gpt2.embedding_dropout);
}

TEST_CASE("qwen3_moe layer rule: decoder_sparse_step and mlp_only_layers") {
  // Layer l is MoE iff l not in mlp_only_layers and (l+1) mod step = 0: with step 2 and layer 3
  // listed, layers 1, 5, 7 are MoE.
  const Model m = load_model(test::data_path("models/tiny-moe.yaml"));
  CHECK(m.name == "tiny-moe");
  std::vector<FfnKind> want(8, FfnKind::dense);
  want[1] = want[5] = want[7] = FfnKind::moe;
  CHECK(m.layer_ffn == want);
}

TEST_CASE("a model: block of symbols stands without a model_type") {
  const Model m = load_model(test::data_path("models/custom-symbols.yaml"));
  CHECK(m.name == "custom-dense");
  CHECK(m.hidden == 2048);
  CHECK(m.head_dim == 128);
  CHECK_FALSE(m.gated);
  CHECK(m.norm == NormKind::layernorm);
}

TEST_CASE("a directory holding config.json is read") {
  // tests/data/hf-dir/config.json is a copy of the Llama-3.1-8B layout.
  const Model m = load_model(test::data_path("hf-dir"));
  CHECK(m.name == "hf-dir");
  CHECK(m.layers == 32);
}

TEST_CASE("bad model input names the file, the field and what was expected") {
  const std::string missing = error_of(test::data_path("bad/no-such-file.json"));
  CHECK(missing.find("no-such-file.json") != std::string::npos);
  CHECK(missing.find("cannot read file") != std::string::npos);

  const std::string malformed = error_of(test::data_path("bad/malformed.json"));
  CHECK(malformed.find("malformed.json:3:") != std::string::npos);
  CHECK(malformed.find("malformed JSON/YAML") != std::string::npos);

  const std::string no_layers = error_of(test::data_path("bad/missing-field.json"));
  CHECK(no_layers.find("field 'num_hidden_layers': missing") != std::string::npos);

  CHECK(error_of(test::data_path("bad/zero-layers.json"))
            .find("field 'num_hidden_layers': expected a positive integer, got '0'") != std::string::npos);
  CHECK(error_of(test::data_path("bad/negative-hidden.json"))
            .find("field 'hidden_size': expected a positive integer, got '-4096'") != std::string::npos);
  CHECK(error_of(test::data_path("bad/fractional-ffn.json"))
            .find("field 'intermediate_size': expected a positive integer, got '14336.5'") != std::string::npos);
  CHECK(error_of(test::data_path("bad/string-heads.json"))
            .find("field 'num_attention_heads': expected a positive integer, got 'many'") != std::string::npos);

  const std::string heads = error_of(test::data_path("bad/heads-not-dividing.json"));
  CHECK(heads.find("field 'num_attention_heads'") != std::string::npos);
  CHECK(heads.find("do not divide the hidden size 4096") != std::string::npos);

  CHECK(error_of(test::data_path("bad/kv-not-dividing.json"))
            .find("field 'num_key_value_heads': expected a divisor of the 32 query heads, got 5") != std::string::npos);

  const std::string unknown = error_of(test::data_path("bad/unknown-type.json"));
  CHECK(unknown.find("field 'model_type': unknown model type 'falcon'") != std::string::npos);
  CHECK(unknown.find("llama") != std::string::npos);
  CHECK(unknown.find("deepseek_v3") != std::string::npos);

  // Group-limited routing: n_group must divide the experts, topk_group hold a token's picks (64
  // groups of 4 experts, one a token, cannot hold 8).
  CHECK(error_of(test::data_path("bad/expert-groups-not-dividing.json"))
            .find("field 'n_group': expected a divisor of the 256 routed experts, got 7") != std::string::npos);
  CHECK(error_of(test::data_path("bad/too-few-groups-per-token.json"))
            .find("field 'topk_group': expected 1 to 64 groups per token, holding at least the 8 experts a token "
                  "picks, got 1") != std::string::npos);

  CHECK(error_of(test::data_path("bad/not-a-map.json")).find("expected a map of fields, got a list") !=
        std::string::npos);

  // Sizes beyond every published model's by far: a clear error, not an exhausted memory (65,537
  // layers took a search past 24 GiB) or counts past 64-bit integers (2^40 experts).
  CHECK(error_of(test::data_path("bad/too-many-layers.json"))
            .find("field 'num_hidden_layers': expected at most 512 body layers, got 65537") != std::string::npos);
  CHECK(error_of(test::data_path("bad/too-many-experts.json"))
            .find("field 'num_local_experts': expected at most 4096 routed experts, got 1099511627776") !=
        std::string::npos);
}

TEST_CASE("an unknown preset lists the close names") {
  const std::string e = error_of("llama-3.1-7b");
  CHECK(e.find("unknown model preset 'llama-3.1-7b'") != std::string::npos);
  CHECK(e.find("did you mean llama-3.1-70b, llama-3.1-8b") != std::string::npos);
  CHECK(e.find("known: deepseek-v3") != std::string::npos);
}

TEST_CASE("--model org/name reads the config.json of the local Hugging Face cache, offline") {
  namespace fs = std::filesystem;
  const fs::path home = fs::temp_directory_path() / "meshfit-hf-home";
  fs::remove_all(home);
  // huggingface_hub's layout: hub/models--org--name/refs/main names the snapshot of the revision.
  const fs::path repo = home / "hub" / "models--test-org--Tiny-3.1";
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / "abc123");
  std::ofstream(repo / "refs" / "main") << "abc123";
  fs::copy_file(meshfit::test::data_path("hf-dir/config.json"), repo / "snapshots" / "abc123" / "config.json");
  ::setenv("HF_HOME", home.c_str(), 1);
  ::unsetenv("HF_HUB_CACHE");
  const meshfit::Model cached = meshfit::load_model("test-org/Tiny-3.1");
  const meshfit::Model direct = meshfit::load_model(meshfit::test::data_path("hf-dir/config.json"));
  CHECK(cached.layers == direct.layers);
  CHECK(cached.hidden == direct.hidden);
  CHECK(cached.name == "Tiny-3.1");
  // Not in the cache: the error says where it looked.
  try {
    meshfit::load_model("test-org/Missing-Model");
    FAIL("expected an InputError");
  } catch (const meshfit::InputError& e) {
    CHECK(std::string(e.what()).find("models--test-org--Missing-Model") != std::string::npos);
  }
  ::unsetenv("HF_HOME");
  fs::remove_all(home);
}

TEST_CASE("model types phi3, granite, granitemoe, starcoder2, gpt_neox: their published parameter counts") {
  // Counted by hand from each config (tests/data/models/), and equal to the total the model's
  // Hugging Face page states:
  // Phi-3-mini: 2·32064·3072 (untied) + 32·(3072·9216 + 3072² + 3·3072·8192 + 2·3072) + 3072
  //   = 3,821,079,552 ("3.8B").
  // Granite-3.0-8B: 49155·4096 (tied) + 40·(2·4096² + 2·4096·1024 + 3·4096·12800 + 2·4096) + 4096
  //   = 8,170,848,256 ("8.1B").
  // Granite-3.0-1B-A400M: 49155·1024 + 24·(2·1024² + 2·1024·512 + 1024·32 + 32·3·1024·512 + 2·1024)
  //   + 1024 = 1,334,628,352 ("1.3B", 400M active).
  // StarCoder2-7B: 49152·4608 (tied) + 32·(2·(4608² + 4608) + 2·(4608·512 + 512) + (4608·18432 +
  //   18432) + (18432·4608 + 4608) + 4·4608) + 2·4608 = 7,173,923,840 ("7B", 7.17B on its page).
  // Pythia-1.4B: 2·50304·2048 + 24·((2048·6144 + 6144) + (2048² + 2048) + (2048·8192 + 8192) +
  //   (8192·2048 + 2048) + 4·2048) + 2·2048 = 1,414,647,808.
  const std::vector<std::pair<std::string, std::int64_t>> published = {{"phi-3-mini-4k.json", 3'821'079'552},
                                                                       {"granite-3.0-8b.json", 8'170'848'256},
                                                                       {"granite-3.0-1b-a400m.json", 1'334'628'352},
                                                                       {"starcoder2-7b.json", 7'173'923'840},
                                                                       {"pythia-1.4b.json", 1'414'647'808}};
  for (const auto& entry : published) {  // not a structured binding: doctest's macros capture it
    const std::string& file = entry.first;
    const Model m = load_model(test::data_path("models/" + file));
    CHECK_MESSAGE(model_params(m).main_total() == entry.second, file);
  }
  const Model neox = load_model(test::data_path("models/pythia-1.4b.json"));
  CHECK(neox.norm == NormKind::layernorm);
  CHECK(!neox.gated);
  CHECK(!neox.tie);
  const Model moe = load_model(test::data_path("models/granite-3.0-1b-a400m.json"));
  CHECK(moe.moe_layer_count() == 24);
  CHECK(moe.top_k == 8);
}

TEST_CASE("model types gpt_oss, gemma2, gemma3_text, olmo2, olmoe, cohere2: their published parameter counts") {
  // Counted by hand from each config (tests/data/models/) and equal to the published totals:
  // gpt-oss-120b: 2·201088·2880 (untied) + 36·(attention 2880·4096 + 2·2880·512 + 4096·2880 + biases
  //   4096 + 2·512 + 2880 + sinks 64 = 26,550,144; experts 128·(2880·5760 + 5760 + 2880·2880 + 2880)
  //   = 3,186,155,520; router 128·2880 + 128; norms 2·2880) + 2880 = 116,829,156,672 (OpenAI's model
  //   card: 116.83B). gpt-oss-20b: the same block with 32 experts, 24 layers = 20,914,757,184 (20.91B).
  // Gemma-2-9B: 256000·3584 (tied) + 42·(3584·4096 + 2·3584·2048 + 4096·3584 + 3·3584·14336 + 4·3584)
  //   + 3584 = 9,241,705,984.
  // Gemma-3-1B: 262144·1152 (tied) + 26·(1152·1024 + 2·1152·256 + 1024·1152 + 3·1152·6912 + 4·1152
  //   + q/k norms 2·256) + 1152 = 999,885,952.
  // OLMo-2-7B: 2·100352·4096 + 32·(4·4096² + 3·4096·11008 + 2·4096 + q/k norms 4096 + 4096) + 4096
  //   = 7,298,617,344 (7.3B).
  // OLMoE-1B-7B: 2·50304·2048 + 16·(4·2048² + q/k norms 2·2048 + router 64·2048 + 64·3·2048·1024 +
  //   2·2048) + 2048 = 6,919,161,856 (6.9B, 1.3B active).
  // Command R7B: 256000·4096 (tied) + 32·(2·4096² + 2·4096·1024 + 3·4096·14336 + one bias-free
  //   LayerNorm 4096) + 4096 = 8,028,033,024 (8.03B).
  const std::vector<std::pair<std::string, std::int64_t>> published = {
      {"gpt-oss-120b.json", 116'829'156'672}, {"gpt-oss-20b.json", 20'914'757'184},
      {"gemma-2-9b.json", 9'241'705'984},     {"gemma-3-1b.json", 999'885'952},
      {"olmo-2-1124-7b.json", 7'298'617'344}, {"olmoe-1b-7b-0924.json", 6'919'161'856},
      {"command-r7b.json", 8'028'033'024}};
  for (const auto& entry : published) {
    const Model m = load_model(test::data_path("models/" + entry.first));
    CHECK_MESSAGE(model_params(m).main_total() == entry.second, entry.first);
  }
  // gpt-oss: 4 of 128 experts active: 5.13B per token (the model card's 5.1B active).
  const Model oss = load_model(test::data_path("models/gpt-oss-120b.json"));
  CHECK(model_params(oss).activated ==
        579'133'440LL * 2 + 36LL * (26'550'144 + 4 * 24'891'840 + 368'768 + 5'760) + 2'880);
  // Windows: gpt-oss alternates 128-token windows from layer 0 (its layer_types); Gemma 3 has one
  // full layer in six (layers 5, 11, 17, 23), Command R7B one in four, Gemma 2 one in two.
  CHECK(oss.layer_window.size() == 36);
  CHECK(oss.layer_window[0] == 128);
  CHECK(oss.layer_window[1] == 0);
  const Model g3 = load_model(test::data_path("models/gemma-3-1b.json"));
  CHECK(std::count(g3.layer_window.begin(), g3.layer_window.end(), 0) == 4);
  CHECK(g3.layer_window[5] == 0);
  CHECK(g3.layer_window[4] == 512);
  const Model cohere = load_model(test::data_path("models/command-r7b.json"));
  CHECK(std::count(cohere.layer_window.begin(), cohere.layer_window.end(), 0) == 8);
  CHECK(cohere.norm == NormKind::layernorm);
  CHECK(cohere.norm_params() == 4096);  // no bias
  const Model g2 = load_model(test::data_path("models/gemma-2-9b.json"));
  CHECK(g2.layer_window[0] == 4096);
  CHECK(g2.layer_window[1] == 0);
  CHECK(g2.tie);
}

TEST_CASE("layer_types must list every body layer, each sliding or full") {
  const std::string bad = R"({"model_type": "gpt_oss", "hidden_size": 64, "intermediate_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
      "num_local_experts": 4, "num_experts_per_tok": 2, "vocab_size": 100, "sliding_window": 8,
      "layer_types": ["sliding_attention"]})";
  try {
    model_from_config(parse_yaml_text(bad, "oss.json"), "oss.json", "oss");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("field 'layer_types': expected one entry per body layer (2), got 1") !=
          std::string::npos);
  }
}

TEST_CASE("validation cases: gpt_oss in the schema's names; an unknown model type read as llama's block") {
  std::vector<UnestimatedCase> unestimated;
  const auto cases = load_validation_cases(test::data_path("validation/new-model-types.yaml"), &unestimated);
  REQUIRE(cases.size() == 2);
  CHECK(unestimated.empty());
  // num_experts and moe_intermediate_size become gpt-oss's num_local_experts and intermediate_size:
  // the same 116,829,156,672 parameters as its config.json.
  CHECK(model_params(cases[0].model).main_total() == 116'829'156'672);
  CHECK(cases[0].defaults_taken == std::vector<std::string>{"null metric -> allocated (Megatron's memory report)"});
  // mystery_moe: llama's block with 8 experts of 512 in every layer, and the row says so.
  const Model& m = cases[1].model;
  CHECK(m.experts == 8);
  CHECK(m.top_k == 2);
  CHECK(m.expert_ffn == 512);
  CHECK(m.moe_layer_count() == 4);
  REQUIRE(cases[1].defaults_taken.size() >= 1);
  CHECK(cases[1].defaults_taken[0] == "model_type 'mystery_moe' -> llama block with its experts");
}

TEST_CASE("validation cases: TFLOP/s per GPU over the FLOPs per token of the case's flops_convention") {
  // GPT 1.7B of Narayanan et al. 2021: L 24, h 2304, a = g = 24, d_h 96, f 9216 (GeLU), s 2048,
  // V 51,200 (already a multiple of 128·tp), 137 TFLOP/s per GPU.
  //   megatron (score s/(2h)): 12h·L·((2 + 2048/4608)·a·d_h + f) + 6hV
  //     = 27,648·(135,168 + 221,184) + 707,788,800 = 10,560,208,896 -> 12,973.23 tokens/s;
  //   megatron_pre_2025 (s/h): 27,648·(159,744 + 221,184) + 707,788,800 = 11,239,686,144
  //     -> 12,188.95 tokens/s;
  //   megatron_2021_paper: 96·L·h²·(1 + s/(6h)) + 6hV = 14,042,529,792 + 707,788,800
  //     = 14,750,318,592 (4/3 of pre_2025's layer part) -> 9,287.93 tokens/s.
  std::vector<UnestimatedCase> unestimated;
  const auto cases = load_validation_cases(test::data_path("validation/conventions.yaml"), &unestimated);
  REQUIRE(cases.size() == 3);
  CHECK(unestimated.empty());
  const double s = 2048, v = 51200;
  CHECK(megatron_reported_flops_per_token(cases[0].model, s, v) == doctest::Approx(10'560'208'896.0).epsilon(1e-12));
  CHECK(megatron_reported_flops_per_token(cases[0].model, s, v, FlopsConvention::megatron_pre_2025) ==
        doctest::Approx(11'239'686'144.0).epsilon(1e-12));
  CHECK(megatron_reported_flops_per_token(cases[0].model, s, v, FlopsConvention::megatron_2021_paper) ==
        doctest::Approx(14'750'318'592.0).epsilon(1e-12));
  CHECK(*cases[0].measured_tokens_per_sec == doctest::Approx(137e12 / 10'560'208'896.0).epsilon(1e-12));
  CHECK(*cases[1].measured_tokens_per_sec == doctest::Approx(137e12 / 11'239'686'144.0).epsilon(1e-12));
  CHECK(*cases[2].measured_tokens_per_sec == doctest::Approx(137e12 / 14'750'318'592.0).epsilon(1e-12));
  // The row lists the convention applied, and the default says so.
  auto has = [](const ValidationCase& c, const std::string& note) {
    return std::find(c.defaults_taken.begin(), c.defaults_taken.end(), note) != c.defaults_taken.end();
  };
  CHECK(has(cases[0],
            "tokens/s per device from tflops_per_device over Megatron's FLOPs per token (megatron, the "
            "default)"));
  CHECK(has(cases[2],
            "tokens/s per device from tflops_per_device over Megatron's FLOPs per token "
            "(megatron_2021_paper)"));
  // comm_overlap [dp, tp, pp]: PP hops hidden, DP overlapped; TP collectives decomposed and
  // pipelined with their GEMMs only where TP has SP (this case has tp 1: nothing to overlap, and
  // the row says so); unstated, the defaults.
  CHECK_FALSE(cases[1].strategy.tp_comm_overlap);
  CHECK(has(cases[1], "comm_overlap tp without tp > 1 and SP -> no TP overlap"));
  CHECK(cases[1].run.options.pp_overlap);
  CHECK(cases[1].run.options.dp_overlap);
  CHECK(has(cases[1], "comm_overlap [dp, tp, pp] -> hidden (§7.6)"));
  CHECK(cases[0].run.options.tp_overlap == 0);
  CHECK_FALSE(cases[0].run.options.pp_overlap);
}

TEST_CASE("validate reads from features.other the FP8 recipe and a compiled loss") {
  // new-devices.yaml: the GB200 case names dynamic tensorwise scaling and "the loss neither compiled
  // nor chunked" (a negation: no compiled loss), the GB300 one MXFP8 and "torch.compile on the model
  // and on the loss".
  const auto cases = load_validation_cases(test::data_path("validation/new-devices.yaml"));
  REQUIRE(cases.size() == 3);
  CHECK(cases[0].run.options.fp8_linears);
  CHECK(cases[0].run.options.fp8_scaling == Fp8Scaling::tensorwise);
  CHECK(cases[1].run.options.fp8_linears);
  CHECK(cases[1].run.options.fp8_scaling == Fp8Scaling::mxfp8);
  CHECK_FALSE(cases[0].run.options.compiled_loss);
  CHECK(cases[1].run.options.compiled_loss);
}

TEST_CASE("validate: Megatron's gpt dropouts and an unfused SwiGLU named in features.other") {
  const auto cases = load_validation_cases(test::data_path("validation/megatron-2023.yaml"));
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].run.options.fused_swiglu);
  CHECK_FALSE(cases[0].model.hidden_dropout);
  CHECK_FALSE(cases[1].run.options.fused_swiglu);
  CHECK(cases[1].model.hidden_dropout);
  CHECK(cases[1].model.attention_dropout);
  // Per layer and token the second keeps two 1-byte dropout masks (2h) and the unfused silu's
  // bf16 output (2f) more; tp 1, one micro-batch of 2 x 2048 tokens in flight, 32 layers:
  // 32 x 4096 x (2 x 4096 + 2 x 10880) = 3,925,868,544 bytes. Attention dropout adds nothing under
  // flash attention (the kernel regenerates its mask).
  const MemoryReport a = estimate_memory(cases[0].model, cases[0].run, cases[0].cluster, cases[0].strategy);
  const MemoryReport b = estimate_memory(cases[1].model, cases[1].run, cases[1].cluster, cases[1].strategy);
  CHECK(b.stages[0].activations - a.stages[0].activations == doctest::Approx(3925868544.0));
}

TEST_CASE("model types glm4_moe and llama4: their published parameter counts") {
  // Configs (tests/data/models/): GLM-4.5-Air's as transformers 4.54.1 printed it after loading the
  // released directory (Glm4MoeConfig repr, keys sorted); GLM-4.5's assembled from its technical
  // report's Table 1 and the released configs of its family; Llama 4 Scout's and Maverick's text
  // configs (their vision encoders left out) from the released config.json as quoted in public
  // repositories. Counted by hand:
  // GLM-4.5-Air: attention 4096·12288 + 2·4096·1024 + 12288·4096 + q/k/v biases 12288 + 2·1024
  //   = 109,066,240 a layer; 1 dense layer 3·4096·10944 = 134,479,872; 45 MoE layers of 128·3·4096·1408
  //   + shared 3·4096·1408 + router 128·4096 + its score bias 128 = 2,232,418,432; norms 2·4096 a
  //   layer; untied tables 2·151552·4096: 46·(109,066,240 + 8,192) + 134,479,872
  //   + 45·2,232,418,432 + 2·620,756,992 + 4096 = 106,852,251,264 (106B published).
  // GLM-4.5: attention 2·5120·12288 + 2·5120·1024 + biases 14,336 + q/k norms 256 = 136,329,472; 3
  //   dense layers 3·5120·12288; 89 MoE layers of 160·3·5120·1536 + 3·5120·1536 + 160·5120 + 160:
  //   92·(136,329,472 + 10,240) + 3·188,743,680 + 89·3,799,285,920 + 2·775,946,240 + 5120
  //   = 352,797,829,024; the report's 355B counts the MTP layer (3,988,069,792) and leaves out the
  //   two tables: 352,797,829,024 − 1,551,892,480 + 3,988,069,792 = 355,234,006,336 (355B).
  // Llama-4-Scout-17B-16E: attention 2·5120² + 2·5120·1024 = 62,914,560 (no biases, a weightless
  //   q/k norm); 48 MoE layers of 16·3·5120·8192 + shared 3·5120·8192 + router 16·5120; norms
  //   2·5120; tables 2·202048·5120: 48·(62,914,560 + 10,240 + 2,139,176,960) + 2,068,971,520 + 5120
  //   = 107,769,861,120 (109B published with the 0.87B vision encoder); active: one routed and the
  //   shared expert a layer, 17,172,894,720 (17B).
  // Llama-4-Maverick-17B-128E: MoE every second layer (interleave_moe_layer_step 2: layers 1, 3, …),
  //   128 experts, the other 24 dense of intermediate_size_mlp 16384: 48·62,924,800
  //   + 24·(128·3·5120·8192 + 125,829,120 + 655,360) + 24·3·5120·16384 + 2,068,971,520 + 5120
  //   = 400,711,848,960 (400B).
  const std::vector<std::pair<std::string, std::int64_t>> published = {
      {"glm-4.5-air.json", 106'852'251'264},
      {"glm-4.5.json", 352'797'829'024},
      {"llama-4-scout-17b-16e.json", 107'769'861'120},
      {"llama-4-maverick-17b-128e.json", 400'711'848'960}};
  for (const auto& entry : published) {
    const Model m = load_model(test::data_path("models/" + entry.first));
    CHECK_MESSAGE(model_params(m).main_total() == entry.second, entry.first);
  }
  const Model glm = load_model(test::data_path("models/glm-4.5.json"));
  CHECK(model_params(glm).main_total() - 2 * 775'946'240LL + model_params(glm).mtp == 355'234'006'336);
  CHECK(glm.mtp_depths == 1);
  CHECK(glm.first_dense == 3);
  CHECK(glm.moe_layer_count() == 89);
  const Model scout = load_model(test::data_path("models/llama-4-scout-17b-16e.json"));
  CHECK(model_params(scout).activated == 17'172'894'720);
  const Model maverick = load_model(test::data_path("models/llama-4-maverick-17b-128e.json"));
  CHECK(maverick.moe_layer_count() == 24);
  CHECK(maverick.layer_ffn[0] == FfnKind::dense);
  CHECK(maverick.layer_ffn[1] == FfnKind::moe);
  // Chunked attention: no_rope_layers empty, so layers 3, 7, … 47 are NoPE (full causal) and the
  // other 36 attend within chunks of 8192.
  REQUIRE(scout.layer_chunk.size() == 48);
  CHECK(scout.layer_chunk[3] == 0);
  CHECK(scout.layer_chunk[0] == 8192);
  CHECK(std::count(scout.layer_chunk.begin(), scout.layer_chunk.end(), 0) == 12);
}

TEST_CASE("a nested llama4 config's bad field is named under text_config") {
  CHECK(error_of(test::data_path("bad/llama4-no-layers.json")).find("field 'text_config.num_hidden_layers': missing") !=
        std::string::npos);
}

TEST_CASE("validate: a run that trained fits its device, its twin that ran out of memory does not") {
  // torchtitan's Llama-2-70B on 64 A100-80GB at local batch 1 trained; at 2 it ran out of memory.
  // Local batch 1 needs the allocator's reserve squeezed (device_total) to fit.
  const auto cases = load_validation_cases(test::data_path("validation/torchtitan-70b-a100-oom.yaml"));
  REQUIRE(cases.size() == 2);
  CHECK(compare_case(cases[0]).fits);
  CHECK_FALSE(compare_case(cases[1]).fits);
}

TEST_CASE("validate: an unstated cp_algo takes the framework's, and an old torch's pipeline outputs") {
  const auto cases = load_validation_cases(test::data_path("validation/framework-defaults.yaml"));
  REQUIRE(cases.size() == 2);
  auto has = [](const ValidationCase& c, const std::string& note) {
    return std::find(c.defaults_taken.begin(), c.defaults_taken.end(), note) != c.defaults_taken.end();
  };
  // torchtitan's context_parallel_rotate_method defaults to "allgather"; DeepSpeed's sequence
  // parallelism is Ulysses (over the whole CP group).
  CHECK(cases[0].strategy.cp_algo == CpAlgo::allgather);
  CHECK(has(cases[0], "null cp_algo -> allgather"));
  CHECK(cases[1].strategy.cp_algo == CpAlgo::ulysses);
  CHECK(cases[1].strategy.cp_u == 2);
  CHECK(has(cases[1], "null cp_algo -> ulysses"));
  CHECK(cases[0].run.options.pipeline_outputs == PipelineOutputs::all);
  CHECK(cases[1].run.options.pipeline_outputs == PipelineOutputs::sent);
}

TEST_CASE("validate: a null vpp under a multi-stage schedule is torchtitan's two stages; Megatron's must be stated") {
  auto edited = [](const std::string& file, const std::vector<std::pair<std::string, std::string>>& edits) {
    std::ifstream in(test::data_path("validation/" + file));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const auto& [from, to] : edits) {
      const std::size_t at = text.find(from);
      REQUIRE(at != std::string::npos);
      text.replace(at, from.size(), to);
    }
    const std::filesystem::path out = std::filesystem::temp_directory_path() / ("meshfit-vpp-" + file);
    std::ofstream(out) << text;
    return out.string();
  };
  // framework-defaults.yaml's torchtitan case (pp 2) given an interleaved schedule and no vpp.
  const std::string tt = edited("framework-defaults.yaml",
                                {{"vpp: 1\n    pp_schedule: 1f1b", "vpp: null\n    pp_schedule: interleaved_1f1b"}});
  const auto cases = load_validation_cases(tt);
  std::filesystem::remove(tt);
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].strategy.vpp == 2);
  CHECK(std::find(cases[0].defaults_taken.begin(), cases[0].defaults_taken.end(),
                  "null vpp -> 2 (interleaved_1f1b: two stages per rank)") != cases[0].defaults_taken.end());
  // two-cases.yaml's Megatron case (pp 4, interleaved) without its vpp: listed, not estimated.
  const std::string mb = edited("two-cases.yaml", {{"vpp: 5", "vpp: null"}});
  std::vector<UnestimatedCase> skipped;
  const auto rest = load_validation_cases(mb, &skipped);
  std::filesystem::remove(mb);
  CHECK(rest.size() == 1);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].field == "strategy.vpp");
}

TEST_CASE("YaRN's attention factor from rope_scaling, as transformers derives it") {
  // Worked by hand with get_mscale(s, m) = 0.1·m·ln s + 1.
  const auto factor_of = [](const std::string& rope) {
    const std::string text = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "rope_scaling": )" +
                             rope + "}";
    return model_from_config(parse_yaml_text(text, "m.json"), "m.json", "m").rope_attention_factor;
  };
  // gpt-oss's: factor 32, no mscale: 0.1·ln 32 + 1 = 1.346574.
  CHECK(factor_of(R"({"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096})") ==
        doctest::Approx(1.346574).epsilon(1e-6));
  // DeepSeek's form: get_mscale(40, 1) / get_mscale(40, 0.707) = 1.368888 / 1.260804 = 1.085726.
  CHECK(factor_of(R"({"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 0.707})") ==
        doctest::Approx(1.085726).epsilon(1e-6));
  // A stated attention_factor wins; other rope types and null leave the rotary unscaled.
  CHECK(factor_of(R"({"rope_type": "yarn", "factor": 4.0, "attention_factor": 1.25})") == 1.25);
  CHECK(factor_of(R"({"rope_type": "llama3", "factor": 8.0})") == 1.0);
  CHECK(factor_of("null") == 1.0);
  try {
    factor_of(R"({"rope_type": "yarn"})");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("rope_scaling.factor") != std::string::npos);
  }
}
