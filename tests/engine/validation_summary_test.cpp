#include "engine/validation_summary.hpp"

#include <doctest/doctest.h>

#include "test_support.hpp"

using namespace meshfit;

TEST_CASE("validate: a measured throughput above the device's peak under the stated shape judges nothing") {
  // tests/data/validation/implied-utilisation.yaml: training FLOPs per token 72·l·h² =
  // 38,654,705,664 (Narayanan et al. 2021 eq. 3; attention and logits add 1.1 %), 96·l·h² with
  // the forward recomputed.
  const auto cases = load_validation_cases(test::data_path("validation/implied-utilisation.yaml"));
  REQUIRE(cases.size() == 4);
  Summary s;
  summarize(cases, s);
  const double flops = 72.0 * 8 * 8192.0 * 8192.0;
  // 7,000 tok/s on an A100 (312 TFLOP/s bf16): 0.867, and 4/3 of it with full recompute.
  CHECK(*s.rows[0].measured_hfu == doctest::Approx(7000 * flops / 312e12).epsilon(0.015));
  CHECK_FALSE(s.rows[0].implausible());
  CHECK(*s.rows[1].measured_hfu == doctest::Approx(7000 * flops * 4 / 3 / 312e12).epsilon(0.015));
  CHECK(s.rows[1].implausible());
  // 38,000 tok/s on an H100 (989 TFLOP/s bf16): 1.485, beyond bf16 and within FP8's twice that.
  CHECK(*s.rows[2].measured_hfu == doctest::Approx(38000 * flops / 989e12).epsilon(0.015));
  CHECK(s.rows[2].implausible());
  CHECK_FALSE(s.rows[3].implausible());
  // The implausible rows keep their error in the table and judge nothing: two cases judged.
  CHECK(s.rows[1].tokens_error.has_value());
  CHECK_FALSE(s.rows[1].judged_tokens_error().has_value());
  CHECK(s.implausible.size() == 2);
  CHECK(s.tokens_abs.size() == 2);
  for (const Residual& r : residuals_of(s))
    CHECK(r.step_time.has_value() == (r.id == cases[0].id || r.id == cases[3].id));
}

TEST_CASE("validate: the shipped bands' coverage counts the cases inside their family's p10-p90") {
  // A pool of ten step-time residuals of one family, 0.90, 0.92, ..., 1.08 (kMinFamilyCases = 8,
  // so the family's own band, unwidened): Hyndman–Fan type 6 puts p10 at rank 1.1, 0.902, and
  // p90 at rank 9.9, 1.078.
  const Family f{"megatron", true, "selective", "blackwell"};
  std::vector<Residual> pool;
  pool.reserve(10);
  for (int i = 0; i < 10; ++i) pool.push_back({"pool" + std::to_string(i), f, std::nullopt, 0.90 + 0.02 * i});
  std::vector<Residual> cases = {{"a", f, std::nullopt, 0.95},
                                 {"b", f, std::nullopt, 1.0},
                                 {"c", f, std::nullopt, 0.901},
                                 {"d", f, std::nullopt, 1.079},
                                 {"e", f, std::nullopt, std::nullopt}};
  const Coverage c = band_coverage(cases, pool);
  CHECK(c.time_cases == 4);  // e measured no step time
  CHECK(c.time_in == 2);
  CHECK(c.memory_cases == 0);  // the pool measured no memory: no band to judge by
  CHECK(c.memory_in == 0);
}
