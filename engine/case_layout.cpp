#include "engine/case_layout.hpp"

namespace meshfit {

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

CaseLayoutResult gap(std::string field, std::string reason, bool not_stated = false) {
  return {CaseLayout{}, CaseLayoutGap{std::move(field), std::move(reason), not_stated}};
}

}  // namespace

CaseLayoutResult resolve_case_layout(const CaseLayoutInput& in, std::vector<std::string>& notes) {
  CaseLayout out;
  // The degrees. A null among tp, pp, cp that is the only null of the four is what the world
  // leaves for it; any other null degree is 1.
  const int nulls = !in.dp + !in.tp + !in.pp + !in.cp;
  const std::int64_t stated_product = in.dp.value_or(1) * in.tp.value_or(1) * in.pp.value_or(1) * in.cp.value_or(1);
  auto degree = [&](const char* name, const std::optional<std::int64_t>& stated) -> std::int64_t {
    if (stated) return *stated;
    if (nulls == 1 && in.world % stated_product == 0) {
      notes.push_back(std::string("null ") + name +
                      " -> world_size/(the other degrees) = " + str(in.world / stated_product));
      return in.world / stated_product;
    }
    notes.push_back(std::string("null ") + name + " -> 1");
    return 1;
  };
  out.tp = degree("tp", in.tp);
  out.pp = degree("pp", in.pp);
  out.cp = degree("cp", in.cp);
  const std::int64_t model_parallel = out.tp * out.pp * out.cp;
  if (in.dp) {
    out.dp = *in.dp;
  } else {
    if (in.world % model_parallel != 0) {
      return gap("strategy.dp",
                 "null, and world_size " + str(in.world) + " is not a multiple of tp·pp·cp = " + str(model_parallel));
    }
    out.dp = in.world / model_parallel;
    notes.push_back("null dp -> world_size/(tp·pp·cp) = " + str(out.dp));
  }
  if (in.world != out.dp * model_parallel) {
    return gap("strategy.world_size", "expected dp·tp·pp·cp = " + str(out.dp * model_parallel));
  }

  // The batch: gb = dp·b·m.
  const bool torchtitan = in.framework == "torchtitan" || in.framework == "pytorch-probe";
  if (in.global_batch) {
    out.global_batch = *in.global_batch;
  } else if (in.micro_batch && (in.num_microbatches || out.pp == 1)) {
    const std::int64_t m = in.num_microbatches.value_or(1);
    out.global_batch = out.dp * *in.micro_batch * m;
    notes.push_back(in.num_microbatches
                        ? "null global_batch_size -> dp·b·m = " + str(out.global_batch)
                        : "null global_batch_size -> dp·b (one micro-batch) = " + str(out.global_batch));
  } else {
    return gap("run.global_batch_size",
               "not stated by the source, and neither the micro-batch size and count that give it", true);
  }
  if (in.micro_batch) {
    out.micro_batch = *in.micro_batch;
  } else if (in.num_microbatches) {
    const std::int64_t per_micro = out.dp * *in.num_microbatches;
    if (out.global_batch % per_micro != 0) {
      return gap("run.micro_batch_size", "null, and global_batch_size " + str(out.global_batch) +
                                             " is not a multiple of dp·num_microbatches = " + str(per_micro));
    }
    out.micro_batch = out.global_batch / per_micro;
    notes.push_back("null micro_batch_size -> gb/(dp·m) = " + str(out.micro_batch));
  } else if (torchtitan && out.pp == 1 && out.global_batch % out.dp == 0) {
    // torchtitan without a pipeline steps its whole local batch at once (training.local_batch_size).
    out.micro_batch = out.global_batch / out.dp;
    notes.push_back("null micro_batch_size -> torchtitan's local batch gb/dp = " + str(out.micro_batch));
  } else {
    out.micro_batch = 1;
    notes.push_back("null micro_batch_size -> 1");
  }
  if (in.num_microbatches) {
    out.num_microbatches = *in.num_microbatches;
  } else {
    const std::int64_t per_step = out.dp * out.micro_batch;
    if (out.global_batch % per_step != 0) {
      return gap("run.num_microbatches", "missing, and global_batch_size " + str(out.global_batch) +
                                             " is not a multiple of dp·micro_batch_size = " + str(per_step));
    }
    out.num_microbatches = out.global_batch / per_step;
    notes.push_back("null num_microbatches -> gb/(dp·b) = " + str(out.num_microbatches));
  }
  return {out, std::nullopt};
}

}  // namespace meshfit
