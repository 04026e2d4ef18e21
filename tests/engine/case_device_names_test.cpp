#include "engine/case_device_names.hpp"

#include <doctest/doctest.h>

using namespace meshfit;

TEST_CASE("case device names: the model and size, whatever words surround them") {
  // The README's names.
  CHECK(case_device_preset("H100-80GB") == "h100-80gb");
  CHECK(case_device_preset("H100-SXM-96GB") == "h100-96gb");
  CHECK(case_device_preset("H100-96GB") == "h100-96gb");
  CHECK(case_device_preset("H200-141GB") == "h200-141gb");
  CHECK(case_device_preset("GH200") == "h200-141gb");
  CHECK(case_device_preset("A800-80GB") == "a800-80gb");
  CHECK(case_device_preset("B200") == "b200-192gb");
  CHECK(case_device_preset("GB300") == "gb300-288gb");
  CHECK(case_device_preset("MI300X-192GB") == "mi300x-192gb");
  // As nvidia-smi, vendors and frameworks print them.
  CHECK(case_device_preset("NVIDIA H100 80GB HBM3") == "h100-80gb");
  CHECK(case_device_preset("nvidia h100 sxm5 80 gb") == "h100-80gb");
  CHECK(case_device_preset("A100-SXM4-40GB") == "a100-40gb");
  CHECK(case_device_preset("DGX-GB200") == "gb200-186gb");
  CHECK(case_device_preset("GB200 NVL72") == "gb200-186gb");
  CHECK(case_device_preset("AMD Instinct MI355X") == "mi355x-288gb");
  CHECK(case_device_preset("MI325X-256GB") == "mi325x-256gb");
  CHECK(case_device_preset("B200 180GB") == "b200-192gb");
  CHECK(case_device_preset("Ascend 910B") == "ascend-910b-64gb");
  CHECK(case_device_preset("h800-80gb") == "h800-80gb");
  CHECK(case_device_preset("L40S") == "l40s-48gb");
  // None: a size the model was never sold in, another form factor, two models, an unknown word.
  CHECK_FALSE(case_device_preset("A100-20GB").has_value());
  CHECK_FALSE(case_device_preset("H100 PCIe").has_value());
  CHECK_FALSE(case_device_preset("H100 NVL").has_value());
  CHECK_FALSE(case_device_preset("H100 H200").has_value());
  CHECK_FALSE(case_device_preset("RTX 4090").has_value());
  CHECK_FALSE(case_device_preset("H100-80GB-96GB").has_value());
  CHECK_FALSE(case_device_preset("").has_value());
}
