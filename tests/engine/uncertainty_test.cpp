#include "engine/uncertainty.hpp"

#include <doctest/doctest.h>

#include "engine/input_error.hpp"

using namespace meshfit;

namespace {

Residual memory_case(const std::string& framework, const std::string& recompute, const std::string& generation,
                     double ratio) {
  return {"c", {framework, false, recompute, generation}, ratio, std::nullopt};
}

// Memory residuals of three families: torchtitan full hopper 1.00, 1.01, ... 1.07 (8), megatron
// selective hopper 0.9 (3), megatron selective ampere 1.1 (6).
std::vector<Residual> three_families() {
  std::vector<Residual> rs;
  rs.reserve(17);
  for (int i = 0; i < 8; ++i) rs.push_back(memory_case("torchtitan", "full", "hopper", 1.0 + 0.01 * i));
  for (int i = 0; i < 3; ++i) rs.push_back(memory_case("megatron", "selective", "hopper", 0.9));
  for (int i = 0; i < 6; ++i) rs.push_back(memory_case("megatron", "selective", "ampere", 1.1));
  return rs;
}

}  // namespace

TEST_CASE("a band: the 10th and 90th percentiles of measured/estimate, at the order statistics' (n + 1)q") {
  // Hyndman-Fan type 6 on 0.8, 0.9, 1.0, 1.1, 1.2 (n = 5), position h = (n + 1)q - 1 from 0:
  // p25 at h = 0.5 -> 0.85; p75 at h = 3.5 -> 1.15; p50 the median 1.0; p10 (h = -0.4) and p90
  // (h = 4.4) beyond the sample, held at its ends: five cases cannot place an 80 % band inside them.
  Band b;
  b.ratios = {0.8, 0.9, 1.0, 1.1, 1.2};
  CHECK(b.quantile(0.25) == doctest::Approx(0.85));
  CHECK(b.quantile(0.75) == doctest::Approx(1.15));
  CHECK(b.quantile(0.50) == doctest::Approx(1.0));
  CHECK(b.quantile(0.10) == 0.8);
  CHECK(b.quantile(0.90) == 1.2);
  CHECK(b.quantile(1.0) == 1.2);
  CHECK(Band{}.quantile(0.9) == 1);
  // Nineteen cases 0.82, 0.84, ... 1.18: p10 at h = 1 -> the second, 0.84; p90 at h = 17 -> 1.16.
  Band c;
  for (int i = 1; i <= 19; ++i) c.ratios.push_back(0.80 + 0.02 * i);
  CHECK(c.quantile(0.10) == doctest::Approx(0.84));
  CHECK(c.quantile(0.90) == doctest::Approx(1.16));
}

TEST_CASE("a family with too few cases borrows from the next coarser one") {
  const std::vector<Residual> rs = three_families();
  // Eight of its own: the family itself.
  const Band tt = band_for(rs, {"torchtitan", false, "full", "hopper"}, Quantity::memory);
  CHECK(tt.cases == 8);
  CHECK(tt.basis == "8 torchtitan dense full hopper cases");
  CHECK(tt.lo == doctest::Approx(1.00));  // h = 9 x 0.1 - 1 < 0: the smallest, 1.00
  CHECK(tt.hi == doctest::Approx(1.07));  // h = 9 x 0.9 - 1 = 7.1 > 7: the largest, 1.07
  // Three of its own: megatron dense selective on any device (nine).
  const Band mb = band_for(rs, {"megatron", false, "selective", "hopper"}, Quantity::memory);
  CHECK(mb.cases == 9);
  CHECK(mb.basis == "9 megatron dense selective cases");
  // No case of the framework at all: every case (17).
  const Band ds = band_for(rs, {"deepspeed", false, "none", "hopper"}, Quantity::memory);
  CHECK(ds.cases == 17);
  CHECK(ds.basis == "17 measured cases");
  // No step-time residual anywhere: no band (ratio 1).
  const Band none = band_for(rs, {"torchtitan", false, "full", "hopper"}, Quantity::step_time);
  CHECK(none.cases == 0);
  CHECK(none.lo == 1);
  CHECK(none.hi == 1);
}

TEST_CASE("a borrowed band widens by what leaving each family out shows") {
  // torchtitan full 1.00..1.07 (8), megatron selective hopper 0.9 (3), ampere 1.1 (6).
  const std::vector<Residual> rs = three_families();
  // Each family left out borrows every other case (type 6 quantiles):
  //  torchtitan: 0.9 x3, 1.1 x6: median 1.1, p10 0.9, p90 1.1; its 1.00..1.07 inside at w = 1.
  //  megatron hopper: 1.00..1.07, 1.1 x6: median 1.065, p10 1.005, p90 1.1; its 0.9 needs
  //    1.065·(1.005/1.065)^w <= 0.9, w >= 2.90.
  //  megatron ampere: 0.9 x3, 1.00..1.07: median 1.02, p10 0.9, p90 1.068; its 1.1 needs
  //    1.02·(1.068/1.02)^w >= 1.1, w >= 1.64.
  // 8 + 6 of 17 (82 %) inside from w = 1.75, the first step reaching 80 %.
  const double w = borrowed_widening(rs, Quantity::memory);
  CHECK(w == 1.75);
  // The family's own band stays as it is; a borrowed one widens about its median:
  // 1.1·(0.9/1.1)^1.75 = 0.774247 .. 1.1.
  const Band own = band_for(rs, {"torchtitan", false, "full", "hopper"}, Quantity::memory, w);
  CHECK(own.lo == doctest::Approx(1.00));
  CHECK(own.hi == doctest::Approx(1.07));
  CHECK(own.basis == "8 torchtitan dense full hopper cases");
  const Band borrowed = band_for(rs, {"megatron", false, "selective", "hopper"}, Quantity::memory, w);
  CHECK(borrowed.lo == doctest::Approx(0.774247).epsilon(1e-5));
  CHECK(borrowed.hi == doctest::Approx(1.1));
  CHECK(borrowed.basis == "9 megatron dense selective cases, widened x1.75 for an unmeasured family");
  CHECK(borrowed.likely(0.9) == doctest::Approx(borrowed.hi));
  // Nothing to leave out: no widening.
  CHECK(borrowed_widening({}, Quantity::memory) == 1);
  CHECK(borrowed_widening(rs, Quantity::step_time) == 1);
}

TEST_CASE("the residuals file reads back what it was written from") {
  const std::vector<Residual> rs = {{"a'b", {"megatron", true, "selective", "hopper"}, 0.875, std::nullopt},
                                    {"c", {"torchtitan", false, "full", "ampere"}, std::nullopt, 1.25}};
  const std::vector<Residual> back = residuals_from_yaml(residuals_yaml(rs, {"x.yaml"}), "r.yaml");
  REQUIRE(back.size() == 2);
  CHECK(back[0].id == "a'b");
  CHECK(back[0].family == rs[0].family);
  CHECK(*back[0].memory == 0.875);
  CHECK(!back[0].step_time);
  CHECK(back[1].family == rs[1].family);
  CHECK(*back[1].step_time == 1.25);
}

TEST_CASE("--fit-margin: none or p50..p99") {
  CHECK(!parse_fit_margin(std::nullopt));
  CHECK(!parse_fit_margin(std::string("none")));
  CHECK(*parse_fit_margin(std::string("p90")) == doctest::Approx(0.9));
  CHECK(*parse_fit_margin(std::string("p50")) == doctest::Approx(0.5));
  for (const char* bad : {"p9", "p100", "90", "p49", "q90", ""}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_fit_margin(std::string(bad)), InputError);
  }
}

TEST_CASE("the bundled residuals are compiled in, one per measured case") {
  // data/uncertainty/residuals.yaml: every case of the two bundled files (30 + 65), the four
  // without a stated sequence length estimated at their model's context.
  CHECK(bundled_residuals().size() == 95);
}
