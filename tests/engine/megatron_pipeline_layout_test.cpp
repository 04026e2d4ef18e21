// Megatron-Core's pipeline layout strings (megatron_pipeline_layout.hpp), unrolled by hand as
// pipeline_parallel_layer_layout.py's parse_str_to_list does, and the layouts meshfit refuses.
#include <doctest/doctest.h>

#include <vector>

#include "engine/megatron_pipeline_layout.hpp"
#include "engine/trainer_export.hpp"
#include "estimator_fixture.hpp"
#include "estimators/pipeline_layout.hpp"

using namespace meshfit;

TEST_CASE("Megatron-Bridge's DeepSeek-V3 layouts unroll to their stages") {
  // The 1,024-GPU H100 recipe's "Et|(tt|)*30mL": the embedding with one layer, 30 stages of two,
  // then the MTP depth with the loss and no decoder layer: 1 + 60 = 61 layers on 32 stages.
  const PipelineLayoutText h100 = parse_megatron_pipeline_layout("Et|(tt|)*30mL");
  CHECK(h100.error.empty());
  std::vector<std::int64_t> want(32, 2);
  want.front() = 1;
  want.back() = 0;
  CHECK(h100.layers_per_vstage == want);
  CHECK(h100.mtp_depths == 1);
  // "Et*4|(t*4|)*14tmL": 4, 14 x 4, then 1 beside the MTP depth and the loss (16 stages, 61 layers).
  const PipelineLayoutText gb300 = parse_megatron_pipeline_layout("Et*4|(t*4|)*14tmL");
  std::vector<std::int64_t> want16(16, 4);
  want16.back() = 1;
  CHECK(gb300.layers_per_vstage == want16);
  // Commas and spaces are cosmetic; a stage may hold the embedding alone.
  const PipelineLayoutText plain = parse_megatron_pipeline_layout("E, | t*12 | t*12 | t*10, L");
  CHECK(plain.layers_per_vstage == std::vector<std::int64_t>{0, 12, 12, 10});
  CHECK(plain.mtp_depths == 0);
}

TEST_CASE("layouts meshfit cannot hold are refused with the reason") {
  // Megatron's own example "Ettt|(tt|)*29,m|L" puts the MTP depth on a stage of its own.
  CHECK(parse_megatron_pipeline_layout("Ettt|(tt|)*29,m|L").error.find("standalone MTP") != std::string::npos);
  CHECK(parse_megatron_pipeline_layout("tE|tL").error.find("embedding") != std::string::npos);
  CHECK(parse_megatron_pipeline_layout("Et|Lt").error.find("loss") != std::string::npos);
  CHECK(parse_megatron_pipeline_layout("Et|t").error.find("'L' last") != std::string::npos);
  CHECK(parse_megatron_pipeline_layout("Ex|L").error.find("unexpected character 'x'") != std::string::npos);
  CHECK(parse_megatron_pipeline_layout("E(t|)*99999999L").error.find("unrolls beyond") != std::string::npos);
  // Each repeat within the bound, together beyond it.
  CHECK(parse_megatron_pipeline_layout("E(t|)*600000,(t|)*600000L").error.find("unrolls beyond") != std::string::npos);
}

TEST_CASE("the layout export writes reads back to the split it was made from") {
  // DeepSeek-V3's 61 layers over uneven pipelines: megatron_args writes --pipeline-model-parallel-layout
  // from the layout the estimate used; reading that string gives the same layers per virtual stage.
  for (const char* strategy :
       {"dp=4,tp=2,sp=true,pp=16,ep=8,zero=1,mbs=1", "dp=8,tp=2,sp=true,pp=8,vpp=4,ep=8,zero=1,mbs=1"}) {
    const test::Case c = test::make_case("deepseek-v3", 128, 4096, 1024, strategy);
    const std::string args = export_strategy(TrainerFormat::megatron, c.model, c.run, c.strategy).text;
    const std::string flag = "--pipeline-model-parallel-layout \"";
    const std::size_t at = args.find(flag);
    REQUIRE_MESSAGE(at != std::string::npos, strategy);
    const std::size_t from = at + flag.size();
    const PipelineLayoutText back = parse_megatron_pipeline_layout(args.substr(from, args.find('"', from) - from));
    CHECK(back.error.empty());
    CHECK(back.mtp_depths == 1);
    const PipelineLayout layout = make_layout(c.model, c.run, c.strategy);
    std::vector<std::int64_t> want;
    for (const VirtualStage& v : layout.vstages) want.push_back(v.layers);
    CHECK_MESSAGE(back.layers_per_vstage == want, strategy);
  }
}
