// SAPP-ND's own input files read directly (issue 23): its MindFormers YAML and HyperParallel YAML
// give the same inputs as meshfit's translation of them (tests/data/sapp-nd/), errors name the
// file and the field, and a train YAML's per-stage recompute list reads back.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/hyperparallel_yaml.hpp"
#include "engine/input_error.hpp"
#include "engine/sapp_nd_config.hpp"
#include "engine/yaml_fields.hpp"
#include "test_support.hpp"

using meshfit::test::data_path;
using meshfit::test::run;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Each stage's total_gib of an `estimate --format json` output.
std::vector<double> stage_totals(const std::string& json) {
  const YAML::Node doc = meshfit::parse_yaml_text(json, "estimate output");
  std::vector<double> totals;
  for (const auto& st : doc["stages"]) totals.push_back(st["total_gib"].as<double>());
  return totals;
}

void check_same(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("--sapp-nd-config: the DeepSeek-V3 fixture's MindFormers YAML = its meshfit translation") {
  const auto file =
      run({"estimate", "--sapp-nd-config", data_path("sapp-nd/deepseek3-mindformers.yaml"), "--format", "json"});
  const auto translated = run({"estimate",
                               "--model",
                               data_path("sapp-nd/deepseek3-model.yaml"),
                               "--device",
                               data_path("sapp-nd/ascend-58gb.yaml"),
                               "--devices",
                               "1024",
                               "--seq",
                               "8192",
                               "--global-batch",
                               "512",
                               "--strategy",
                               "dp=16,tp=4,sp=true,pp=16,ep=8,zero=1,shard_group=2,recompute=full,mbs=1,m=32",
                               "--precision",
                               "fp32",
                               "--rules",
                               "sapp-nd",
                               "--run-options",
                               data_path("sapp-nd/deepseek3-run.yaml"),
                               "--format",
                               "json"});
  CHECK(file.code == 1);  // SAPP-ND: "DOES NOT FIT"
  CHECK(translated.code == 1);
  check_same(stage_totals(file.out), stage_totals(translated.out));
  CHECK(has(file.out, "\"peak_stage\":2"));
}

TEST_CASE("--sapp-nd-config: the Mixtral fixture's MindFormers YAML = its meshfit translation") {
  const auto file =
      run({"estimate", "--sapp-nd-config", data_path("sapp-nd/mixtral-mindformers.yaml"), "--format", "json"});
  const auto translated = run({"estimate",
                               "--model",
                               "mixtral-8x7b",
                               "--device",
                               data_path("sapp-nd/ascend-58gb.yaml"),
                               "--devices",
                               "16",
                               "--seq",
                               "4096",
                               "--global-batch",
                               "128",
                               "--strategy",
                               "dp=8,tp=1,sp=false,pp=2,ep=8,zero=1,shard_group=8,recompute=full,mbs=1,m=16",
                               "--precision",
                               "deepspeed_fp16",
                               "--grad-bytes",
                               "2",
                               "--rules",
                               "sapp-nd",
                               "--run-options",
                               data_path("sapp-nd/mixtral-run.yaml"),
                               "--format",
                               "json"});
  CHECK(file.code == 0);
  check_same(stage_totals(file.out), stage_totals(translated.out));
  // --rules given explicitly wins: meshfit's own physics on the same file.
  const auto standard = run({"estimate", "--sapp-nd-config", data_path("sapp-nd/mixtral-mindformers.yaml"), "--rules",
                             "default", "--format", "json"});
  CHECK(stage_totals(standard.out) != stage_totals(file.out));
}

TEST_CASE("--sapp-nd-config: the HyperParallel YAML reads into the same model and layout") {
  const meshfit::SappNdConfig hp = meshfit::read_sapp_nd_config(data_path("sapp-nd/deepseek3-hyperparallel.yaml"));
  const meshfit::SappNdConfig mf = meshfit::read_sapp_nd_config(data_path("sapp-nd/deepseek3-mindformers.yaml"));
  CHECK(hp.format == "hyperparallel");
  CHECK(mf.format == "mindformers");
  CHECK(hp.devices == 1024);
  CHECK(hp.seq == 8192);
  CHECK(hp.global_batch == 512);
  // activation_checkpoint: full recomputes every layer (no per-stage counts in this format).
  CHECK(hp.strategy == "dp=16,tp=4,sp=true,pp=16,ep=8,etp=1,zero=1,shard_group=2,recompute=full,mbs=1,m=32");
  CHECK(mf.strategy == "dp=16,tp=4,sp=true,pp=16,ep=8,etp=1,zero=1,shard_group=2,recompute=full,mbs=1,m=32");
  // 62 slots (61 layers and the MTP depth) with the offsets: 3,3,4×12,5,3; the MTP slot is
  // meshfit's head-stage depth, so the last stage holds 2 body layers.
  const std::vector<std::int64_t> layers = {3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 2};
  CHECK(hp.layout_options["layers_per_vstage"].as<std::vector<std::int64_t>>() == layers);
  CHECK(mf.layout_options["layers_per_vstage"].as<std::vector<std::int64_t>>() == layers);
  CHECK(mf.layout_options["full_layers_per_vstage"].as<std::vector<std::int64_t>>() ==
        std::vector<std::int64_t>{1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1});
  for (const char* key : {"hidden_size", "num_hidden_layers", "vocab_size", "n_routed_experts", "kv_lora_rank",
                          "num_nextn_predict_layers", "moe_intermediate_size", "first_k_dense_replace"}) {
    CAPTURE(key);
    CHECK(hp.model[key].as<std::int64_t>() == mf.model[key].as<std::int64_t>());
  }
  const auto r = run({"estimate", "--sapp-nd-config", data_path("sapp-nd/deepseek3-hyperparallel.yaml")});
  CHECK(r.code == 1);
  CHECK(has(r.out, "stage"));
}

TEST_CASE("--sapp-nd-config: a file with the fewest fields (a dense model, meshfit's even split)") {
  const meshfit::SappNdConfig c = meshfit::read_sapp_nd_config(data_path("sapp-nd/dense-minimal.yaml"));
  CHECK(c.model["model_type"].as<std::string>() == "llama");
  CHECK(c.strategy == "dp=2,tp=2,sp=false,pp=2,recompute=none,mbs=1,m=4");
  CHECK(c.layout_options.size() == 0);
  CHECK(c.devices == 8);
  CHECK(c.global_batch == 8);
  const auto r = run({"estimate", "--sapp-nd-config", data_path("sapp-nd/dense-minimal.yaml")});
  CHECK(r.code == 0);
}

TEST_CASE("--sapp-nd-config: bad input names the file and the field") {
  const auto offset = run({"estimate", "--sapp-nd-config", data_path("sapp-nd/bad-offset.yaml")});
  CHECK(offset.code == 2);
  CHECK(has(offset.err, "bad-offset.yaml"));
  CHECK(has(offset.err, "model.model_config.offset"));
  CHECK(has(offset.err, "got 10"));
  const auto dtype = run({"estimate", "--sapp-nd-config", data_path("sapp-nd/bad-dtype.yaml")});
  CHECK(dtype.code == 2);
  CHECK(has(dtype.err, "model.model_config.param_init_type"));
  CHECK(has(dtype.err, "half"));
  const auto degree = run({"estimate", "--sapp-nd-config", data_path("sapp-nd/bad-degree.yaml")});
  CHECK(degree.code == 2);
  CHECK(has(degree.err, "parallel_config.data_parallel"));
  CHECK(has(degree.err, "at most"));
  const auto neither = run({"estimate", "--sapp-nd-config", data_path("sapp-nd/ascend-58gb.yaml")});
  CHECK(neither.code == 2);
  CHECK(has(neither.err, "parallel_config"));
  const auto both =
      run({"estimate", "--sapp-nd-config", data_path("sapp-nd/mixtral-mindformers.yaml"), "--model", "mixtral-8x7b"});
  CHECK(both.code == 2);
  CHECK(has(both.err, "--model comes from --sapp-nd-config"));
}

TEST_CASE("train YAML: a per-stage recompute list reads back when the strategy string can hold it") {
  CHECK(meshfit::strategy_string_from_train_yaml(data_path("sapp-nd/train-recompute-equal.yaml")) ==
        "dp=2,tp=2,pp=2,m=4,schedule=1f1b,mbs=1,recompute=full,recompute_layers=2");
  try {
    (void)meshfit::strategy_string_from_train_yaml(data_path("sapp-nd/train-recompute-uneven.yaml"));
    FAIL("expected an InputError");
  } catch (const meshfit::InputError& e) {
    const std::string what = e.what();
    CHECK(has(what, "train-recompute-uneven.yaml"));
    CHECK(has(what, "recompute_config.recompute"));
    CHECK(has(what, "[1, 2]"));
    CHECK(has(what, "full_layers_per_vstage"));
  }
}

TEST_CASE("search --sapp-nd-config: the file's model, devices and run; its layout not pinned") {
  const auto r = run({"search", "--sapp-nd-config", data_path("sapp-nd/mixtral-mindformers.yaml"), "--format", "json",
                      "-q", "--top", "3"});
  CHECK(r.code == 0);
  const YAML::Node doc = meshfit::parse_yaml_text(r.out, "search output");
  CHECK(doc["inputs"]["devices"].as<std::int64_t>() == 16);
  CHECK(doc["inputs"]["seq"].as<std::int64_t>() == 4096);
  CHECK(doc["inputs"]["global_batch"].as<std::int64_t>() == 128);
  CHECK(doc["inputs"]["rules"].as<std::string>() == "sapp-nd");
  // Conventions switched off are named in the inputs, in --rules' own form.
  const auto off = run({"search", "--sapp-nd-config", data_path("sapp-nd/mixtral-mindformers.yaml"), "--rules",
                        "sapp-nd:-seed_output,-resident_comm", "--format", "json", "-q", "--top", "1"});
  CHECK(meshfit::parse_yaml_text(off.out, "search output")["inputs"]["rules"].as<std::string>() ==
        "sapp-nd:-resident_comm,-seed_output");
  // Strategies other than the file's dp=8,pp=2 are searched.
  CHECK(doc["counts"]["valid"].as<std::int64_t>() > 1);
  const auto both = run({"search", "--sapp-nd-config", data_path("sapp-nd/mixtral-mindformers.yaml"), "--seq", "8k"});
  CHECK(both.code == 2);
  CHECK(has(both.err, "--seq comes from --sapp-nd-config"));
}
