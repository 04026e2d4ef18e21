#include "engine/case_layout.hpp"

#include <doctest/doctest.h>

using namespace meshfit;

namespace {

CaseLayoutInput stated() {
  CaseLayoutInput in;
  in.framework = "megatron";
  in.world = 64;
  in.dp = 8;
  in.tp = 4;
  in.pp = 2;
  in.cp = 1;
  in.global_batch = 512;
  in.micro_batch = 2;
  in.num_microbatches = 32;
  return in;
}

}  // namespace

TEST_CASE("case layout: every field stated is taken as stated") {
  std::vector<std::string> notes;
  const CaseLayoutResult r = resolve_case_layout(stated(), notes);
  REQUIRE_FALSE(r.gap.has_value());
  CHECK(r.layout.dp == 8);
  CHECK(r.layout.tp == 4);
  CHECK(r.layout.pp == 2);
  CHECK(r.layout.global_batch == 512);
  CHECK(r.layout.micro_batch == 2);
  CHECK(r.layout.num_microbatches == 32);
  CHECK(notes.empty());
}

TEST_CASE("case layout: a degree the world fixes is derived, the rest default to 1") {
  std::vector<std::string> notes;
  CaseLayoutInput in = stated();
  in.dp.reset();  // 64/(4·2·1) = 8
  CHECK(resolve_case_layout(in, notes).layout.dp == 8);
  CHECK(notes.back() == "null dp -> world_size/(tp·pp·cp) = 8");
  in = stated();
  in.tp.reset();  // 64/(8·2·1) = 4
  CHECK(resolve_case_layout(in, notes).layout.tp == 4);
  in = stated();
  in.tp.reset();
  in.pp.reset();  // two nulls: both 1, and 8·1·1·1 is not 64
  const CaseLayoutResult r = resolve_case_layout(in, notes);
  REQUIRE(r.gap.has_value());
  CHECK(r.gap->field == "strategy.world_size");
  CHECK(r.gap->reason == "expected dp·tp·pp·cp = 8");
  in = stated();
  in.dp.reset();
  in.pp.reset();  // pp 1, then dp = 64/(4·1·1) = 16
  const CaseLayout l = resolve_case_layout(in, notes).layout;
  CHECK(l.pp == 1);
  CHECK(l.dp == 16);
}

TEST_CASE("case layout: the batch identity gb = dp·b·m fills one null; the framework the rest") {
  std::vector<std::string> notes;
  CaseLayoutInput in = stated();
  in.global_batch.reset();  // 8·2·32
  CHECK(resolve_case_layout(in, notes).layout.global_batch == 512);
  in = stated();
  in.micro_batch.reset();  // 512/(8·32)
  CHECK(resolve_case_layout(in, notes).layout.micro_batch == 2);
  CHECK(notes.back() == "null micro_batch_size -> gb/(dp·m) = 2");
  in = stated();
  in.num_microbatches.reset();  // 512/(8·2)
  CHECK(resolve_case_layout(in, notes).layout.num_microbatches == 32);
  // Micro-batch and count both null: Megatron's micro-batch 1 (m = 512/8 = 64); torchtitan without a
  // pipeline its local batch (b = 512/8 = 64, m = 1).
  in = stated();
  in.micro_batch.reset();
  in.num_microbatches.reset();
  CaseLayout l = resolve_case_layout(in, notes).layout;
  CHECK(l.micro_batch == 1);
  CHECK(l.num_microbatches == 64);
  in.framework = "torchtitan";
  in.tp = 8;
  in.pp = 1;
  l = resolve_case_layout(in, notes).layout;
  CHECK(l.micro_batch == 64);
  CHECK(l.num_microbatches == 1);
  CHECK(notes[notes.size() - 2] == "null micro_batch_size -> torchtitan's local batch gb/dp = 64");
  // No pipeline and no count: one micro-batch of the stated size, gb = 8·2.
  in = stated();
  in.tp = 8;
  in.pp = 1;
  in.global_batch.reset();
  in.num_microbatches.reset();
  l = resolve_case_layout(in, notes).layout;
  CHECK(l.global_batch == 16);
  CHECK(l.num_microbatches == 1);
}

TEST_CASE("case layout: what the identities leave open is a gap naming the field") {
  std::vector<std::string> notes;
  CaseLayoutInput in = stated();
  in.global_batch.reset();
  in.micro_batch.reset();
  CaseLayoutResult r = resolve_case_layout(in, notes);
  REQUIRE(r.gap.has_value());
  CHECK(r.gap->field == "run.global_batch_size");
  CHECK(r.gap->not_stated);
  in = stated();
  in.micro_batch.reset();
  in.num_microbatches = 3;  // 512 is not a multiple of 8·3
  r = resolve_case_layout(in, notes);
  REQUIRE(r.gap.has_value());
  CHECK(r.gap->field == "run.micro_batch_size");
  CHECK_FALSE(r.gap->not_stated);
  in = stated();
  in.dp.reset();
  in.world = 60;  // not a multiple of tp·pp·cp = 8
  r = resolve_case_layout(in, notes);
  REQUIRE(r.gap.has_value());
  CHECK(r.gap->field == "strategy.dp");
}
