#include "estimators/fp8_weight_copies.hpp"

namespace meshfit {

double te_fp8_weight_bytes(Fp8Scaling scaling, const Device& device) {
  if (scaling == Fp8Scaling::mxfp8) return 2 * (1 + 1.0 / 32);
  const bool non_tn_gemms = device.generation == "blackwell";
  return non_tn_gemms ? 1 : 2;
}

}  // namespace meshfit
