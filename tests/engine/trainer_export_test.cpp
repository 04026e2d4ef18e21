// `meshfit export` (issue 7): each trainer's output for a fixed strategy against an expected file
// written by hand from that trainer's documented flag and field names (tests/data/export/), the
// HyperParallel train YAML read back into the same strategy, and strategies a trainer cannot
// express rejected with a reason.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "engine/device_config.hpp"
#include "engine/model_config.hpp"
#include "engine/run_config.hpp"
#include "engine/strategy_string.hpp"
#include "engine/trainer_export.hpp"
#include "engine/yaml_fields.hpp"
#include "test_support.hpp"

using meshfit::test::data_path;
using meshfit::test::run;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> export_args(const std::string& model, const std::string& devices, const std::string& seq,
                                     const std::string& batch, const std::string& to, const std::string& strategy) {
  return {"export", "--model",        model, "--device", "h100-80gb", "--devices",  devices, "--seq",
          seq,      "--global-batch", batch, "--to",     to,          "--strategy", strategy};
}

}  // namespace

TEST_CASE("export: Megatron-LM arguments (dense: interleaved PP, ring CP, block recompute)") {
  // 80 layers over pp·vpp = 8 virtual stages: 10 each; recompute_layers 4 per stage over 2
  // chunks: 2 per chunk (Megatron's block method); G = dp·cp = 4, one optimizer instance.
  const auto r =
      run(export_args("llama-3.1-70b", "64", "8192", "512", "megatron",
                      "tp=4,sp=true,pp=4,vpp=2,cp=2,cp_algo=ring,zero=1,recompute=full,recompute_layers=4,mbs=1"));
  CHECK(r.code == 0);
  CHECK(r.out == slurp(data_path("export/llama70b_megatron.txt")));
}

TEST_CASE("export: Megatron-LM arguments (MoE: hybrid CP, EP, distributed optimizer instances)") {
  // dp = 64/(2·4) = 8; shard group 4 of dp·cp = 32 ranks: 8 optimizer instances; hybrid CP of
  // Ulysses 2 inside a ring of 2.
  const auto r = run(export_args("mixtral-8x7b", "64", "4096", "512", "megatron",
                                 "tp=2,sp=true,cp=4,cp_algo=hybrid,cp_u=2,ep=8,etp=1,zero=1,shard_group=4,mbs=2"));
  CHECK(r.code == 0);
  CHECK(r.out == slurp(data_path("export/mixtral_megatron.txt")));
}

TEST_CASE("export: torchtitan TOML (HSDP, interleaved PP, per-op selective AC)") {
  // dp = 16/(2·2) = 4, FSDP over 2 of them, 2 replicas; m = 64/(4·1) = 16 micro-batches of 1 make
  // the local batch under PP; 32 layers + embedding + output (torchtitan's split counts both) =
  // 34 slots: 9 per virtual stage makes ceil(34/9) = 4 = pp·vpp stages.
  auto args = export_args("llama-3.1-8b", "16", "8192", "64", "torchtitan",
                          "tp=2,sp=true,pp=2,vpp=2,zero=3,shard_group=2,recompute=selective,mbs=1");
  args.insert(args.end(), {"--framework", "torchtitan"});
  const auto r = run(args);
  CHECK(r.code == 0);
  CHECK(r.out == slurp(data_path("export/llama8b_torchtitan.toml")));
}

TEST_CASE("export: DeepSpeed JSON (ZeRO-3 with MiCS shard group, accumulation steps)") {
  // dp = 8, b = 2: 64 = 2 · 4 · 8, so 4 accumulation steps; shard group 4 < dp: MiCS.
  const auto r =
      run(export_args("llama-3.1-8b", "8", "4096", "64", "deepspeed", "zero=3,shard_group=4,recompute=full,mbs=2"));
  CHECK(r.code == 0);
  CHECK(r.out == slurp(data_path("export/llama8b_deepspeed.json")));
  CHECK(has(r.err, "gradient_checkpointing_enable"));  // full recompute is not a JSON field: said on stderr
}

TEST_CASE("export: HyperParallel train YAML, and meshfit reads it back") {
  const std::string strategy =
      "tp=4,sp=true,pp=2,cp=2,cp_algo=ulysses,ep=4,etp=4,zero=2,recompute=full,recompute_layers=3,mbs=1";
  const auto r = run(export_args("mixtral-8x7b", "64", "4096", "512", "hyperparallel", strategy));
  CHECK(r.code == 0);
  CHECK(r.out == slurp(data_path("export/mixtral_hyperparallel.yaml")));

  const auto path = (std::filesystem::temp_directory_path() / "meshfit-export-test.yaml").string();
  std::ofstream(path) << r.out;
  const meshfit::Model m = meshfit::load_model("mixtral-8x7b");
  const meshfit::Cluster c = meshfit::make_cluster("h100-80gb", 64);
  meshfit::RunFlags f;
  f.seq = 4096;
  f.global_batch = 512;
  const meshfit::Run run_ = meshfit::make_run(f, true);
  std::vector<std::string> warnings;
  const auto direct = meshfit::parse_strategy(strategy, m, run_, c, warnings);
  const auto back = meshfit::parse_strategy(path, m, run_, c, warnings);
  CHECK(meshfit::strategy_to_string(back) == meshfit::strategy_to_string(direct));
  // The same file drives `estimate`.
  const auto est = run({"estimate", "--model", "mixtral-8x7b", "--device", "h100-80gb", "--devices", "64", "--seq",
                        "4096", "--global-batch", "512", "--strategy", path});
  CHECK(has(est.out, meshfit::strategy_to_string(direct)));
}

TEST_CASE("export: what a trainer cannot express is an error that says why (exit 2)") {
  const auto ulysses =
      run(export_args("llama-3.1-8b", "16", "8192", "64", "torchtitan", "tp=2,sp=true,cp=2,cp_algo=ulysses,zero=3"));
  CHECK(ulysses.code == 2);
  CHECK(has(ulysses.err, "torchtitan cannot express this strategy"));
  CHECK(has(ulysses.err, "Ulysses"));
  const auto zero1 = run(export_args("llama-3.1-8b", "16", "8192", "64", "torchtitan", "tp=2,sp=true,zero=1"));
  CHECK(zero1.code == 2);
  CHECK(has(zero1.err, "zero_stage=1"));
  // DeepSpeed's AutoTP training runs with ZeRO 0-2 and without sequence parallelism.
  const auto tp = run(export_args("llama-3.1-8b", "16", "8192", "64", "deepspeed", "tp=2,sp=true,zero=2"));
  CHECK(tp.code == 2);
  CHECK(has(tp.err, "AutoTP"));
  const auto autotp = run(export_args("llama-3.1-8b", "16", "8192", "64", "deepspeed", "tp=2,zero=2"));
  CHECK(autotp.code == 0);
  CHECK(has(autotp.out, "\"autotp_size\": 2"));
  const auto gpipe = run(export_args("llama-3.1-8b", "16", "8192", "64", "megatron", "pp=2,schedule=gpipe"));
  CHECK(gpipe.code == 2);
  CHECK(has(gpipe.err, "Megatron-LM has no gpipe schedule"));
  auto per_vstage = export_args("llama-3.1-70b", "64", "8192", "64", "megatron",
                                "tp=8,sp=true,pp=4,dp=2,zero=1,recompute=full,mbs=1");
  per_vstage.insert(per_vstage.end(), {"--run-options", meshfit::test::data_path("run-options/full-per-vstage.yaml")});
  const auto listed = run(per_vstage);
  CHECK(listed.code == 2);
  CHECK(has(listed.err, "megatron cannot express this strategy: full_layers_per_vstage"));
  const auto unknown = run(export_args("llama-3.1-8b", "16", "8192", "64", "nemo", "tp=2"));
  CHECK(unknown.code == 2);
  CHECK(has(unknown.err, "--to"));
}

namespace {
// Llama-3.1-8B's Megatron-LM arguments on 8 devices, with a run-options file ("" for none).
auto megatron_llama8b(const std::string& run_options) {
  auto args = export_args("llama-3.1-8b", "8", "4096", "64", "megatron", "tp=1,zero=1,mbs=1");
  if (!run_options.empty()) args.insert(args.end(), {"--run-options", data_path("run-options/" + run_options)});
  return run(args);
}
}  // namespace

TEST_CASE("export: Megatron-LM arguments say they run the unfused loss the estimate did not take") {
  // Megatron-LM's arguments.py rejects --cross-entropy-fusion-impl te (June 2026): the arguments
  // leave it out and the export says so on stderr.
  const auto r = megatron_llama8b("te-cross-entropy.yaml");
  CHECK(r.code == 0);
  CHECK_FALSE(has(r.out, "cross-entropy"));
  CHECK(has(r.err, "Transformer Engine's fused cross-entropy"));
  CHECK_FALSE(has(megatron_llama8b("").err, "cross-entropy"));
}

TEST_CASE("export: Megatron-LM arguments say they run in bf16 the attention the estimate ran in FP8") {
  // arguments.py (d98e8a6) lists fp8_dot_product_attention among the TransformerConfig fields with
  // no CLI argument: no flag, and a note on stderr.
  const auto r = megatron_llama8b("fp8-attention.yaml");
  CHECK(r.code == 0);
  CHECK(has(r.out, "--fp8-format hybrid"));
  CHECK_FALSE(has(r.out, "dot-product"));
  CHECK(has(r.err, "attention core in FP8"));
  CHECK_FALSE(has(megatron_llama8b("fp8-param-gather.yaml").err, "attention core in FP8"));
}

TEST_CASE("export: run options the estimate took are Megatron-LM arguments") {
  struct Row {
    const char* run_options;
    std::vector<const char*> flags;
    const char* absent_without;  // not in the arguments of a run without the options
  };
  const Row rows[] = {
      {"precision-aware-optimizer.yaml", {"--use-precision-aware-optimizer"}, "precision-aware"},
      // FP8 weights (the copies kept as the weights): --fp8-param-gather with the FP8 format.
      {"fp8-param-gather.yaml", {"--fp8-format hybrid", "--fp8-param-gather"}, "fp8"},
  };
  const auto plain = megatron_llama8b("");
  for (const Row& row : rows) {
    CAPTURE(row.run_options);
    const auto r = megatron_llama8b(row.run_options);
    CHECK(r.code == 0);
    for (const char* flag : row.flags) CHECK(has(r.out, flag));
    CHECK_FALSE(has(plain.out, row.absent_without));
  }
}

TEST_CASE("export: a train YAML without parallel_config names the file and the field") {
  const auto path = (std::filesystem::temp_directory_path() / "meshfit-export-bad.yaml").string();
  std::ofstream(path) << "runner_config:\n  batch_size: 1\n";
  const auto r = run({"estimate", "--model", "llama-3.1-8b", "--device", "h100-80gb", "--devices", "8", "--seq", "4096",
                      "--global-batch", "64", "--strategy", path});
  CHECK(r.code == 2);
  CHECK(has(r.err, path));
  CHECK(has(r.err, "parallel_config"));
}

TEST_CASE("export: an interrupted search's pick says so in the format's own syntax") {
  using meshfit::TrainerFormat;
  const std::string args = slurp(data_path("export/llama70b_megatron.txt"));
  const std::string marked = meshfit::mark_interrupted(TrainerFormat::megatron, args);
  CHECK(marked.rfind("# meshfit: INTERRUPTED search", 0) == 0);
  CHECK(marked.substr(marked.find('\n') + 1) == args);  // the arguments themselves unchanged
  CHECK(meshfit::mark_interrupted(TrainerFormat::torchtitan, "[parallelism]\n").rfind("# meshfit: INTERRUPTED", 0) ==
        0);
  // DeepSpeed's JSON has no comments: a top-level field, and the document still parses.
  const std::string json =
      meshfit::mark_interrupted(TrainerFormat::deepspeed, slurp(data_path("export/llama8b_deepspeed.json")));
  const YAML::Node doc = meshfit::parse_yaml_text(json, "marked.json");
  CHECK(doc["meshfit_interrupted"].as<std::string>().find("INTERRUPTED") != std::string::npos);
  CHECK(doc["train_batch_size"].as<int>() == 64);
}

TEST_CASE("export: offload in each trainer's own option (issue 23), or a reason it has none") {
  // Megatron-LM arguments.py: --optimizer-cpu-offload asserts --use-precision-aware-optimizer.
  const auto mlm = run(export_args("llama-3.1-8b", "8", "4096", "8", "megatron", "dp=8,zero=1,offload=optimizer"));
  CHECK(mlm.code == 0);
  CHECK(has(mlm.out, "--optimizer-cpu-offload"));
  CHECK(has(mlm.out, "--use-precision-aware-optimizer"));
  const auto mlm_params = run(export_args("llama-3.1-8b", "8", "4096", "8", "megatron", "dp=8,zero=3,offload=params"));
  CHECK(mlm_params.code == 2);
  CHECK(has(mlm_params.err, "not parameters"));
  // torchtitan's training.enable_cpu_offload is FSDP2's CPUOffloadPolicy: parameters too.
  const auto tt = run(export_args("llama-3.1-8b", "8", "4096", "8", "torchtitan", "dp=8,zero=3,offload=params"));
  CHECK(tt.code == 0);
  CHECK(has(tt.out, "enable_cpu_offload = true"));
  const auto tt_opt = run(export_args("llama-3.1-8b", "8", "4096", "8", "torchtitan", "dp=8,zero=3,offload=optimizer"));
  CHECK(tt_opt.code == 2);
  CHECK(has(tt_opt.err, "offload=params"));
  // DeepSpeed: zero_optimization.offload_optimizer, and offload_param with stage 3.
  const auto ds = run(export_args("llama-3.1-8b", "8", "4096", "8", "deepspeed", "dp=8,zero=3,offload=params"));
  CHECK(ds.code == 0);
  CHECK(has(ds.out, "\"offload_optimizer\": {\n      \"device\": \"cpu\""));
  CHECK(has(ds.out, "\"offload_param\": {\n      \"device\": \"cpu\""));
  const auto ds_opt = run(export_args("llama-3.1-8b", "8", "4096", "8", "deepspeed", "dp=8,zero=2,offload=optimizer"));
  CHECK(ds_opt.code == 0);
  CHECK(has(ds_opt.out, "offload_optimizer"));
  CHECK_FALSE(has(ds_opt.out, "offload_param"));
}

TEST_CASE("export: TP communication overlap in each trainer's own option (issue 23), or a reason it has none") {
  // Megatron-LM: --tp-comm-overlap, beside the --sequence-parallel arguments.py asserts with it.
  const auto mlm =
      run(export_args("llama-3.1-70b", "64", "4096", "64", "megatron", "tp=8,sp=true,tp_comm_overlap=true,zero=1"));
  CHECK(mlm.code == 0);
  CHECK(has(mlm.out, "--sequence-parallel"));
  CHECK(has(mlm.out, "--tp-comm-overlap"));
  CHECK_FALSE(has(run(export_args("llama-3.1-70b", "64", "4096", "64", "megatron", "tp=8,sp=true,zero=1")).out,
                  "--tp-comm-overlap"));
  // torchtitan: AsyncTP lives in [compile] and needs the model compiled (CompileConfig).
  const auto tt =
      run(export_args("llama-3.1-70b", "64", "4096", "64", "torchtitan", "tp=8,sp=true,tp_comm_overlap=true,zero=3"));
  CHECK(tt.code == 0);
  CHECK(has(tt.out, "[compile]\nenable = true\n"));
  CHECK(has(tt.out, "enable_async_tensor_parallel = true"));
  // DeepSpeed's AutoTP runs without SP, and HyperParallel's YAML has no such setting.
  const auto ds =
      run(export_args("llama-3.1-70b", "64", "4096", "64", "deepspeed", "tp=8,sp=true,tp_comm_overlap=true,zero=1"));
  CHECK(ds.code == 2);
  const auto hp = run(
      export_args("llama-3.1-70b", "64", "4096", "64", "hyperparallel", "tp=8,sp=true,tp_comm_overlap=true,zero=1"));
  CHECK(hp.code == 2);
  CHECK(has(hp.err, "TP communication overlap"));
}
