// The HyperParallel / SAPP-ND style train YAML (MindFormers' parallel_config, as SAPP-ND reads
// it): parallel_config {data_parallel, model_parallel, context_parallel, context_parallel_algo,
// ulysses_degree_in_cp, expert_parallel, pipeline_stage, micro_batch_num, use_seq_parallel},
// parallel {enable_parallel_optimizer, parallel_optimizer_config {optimizer_level,
// optimizer_weight_shard_size}}, model.model_config.pp_interleave_num, runner_config.batch_size,
// recompute_config {recompute (true/false, a count, or one count per stage), select_recompute}.
// Experts are split by model_parallel (etp = tp). meshfit reads its own export back
// (strategy_string_from_train_yaml), so a strategy can travel as this file.
#include <algorithm>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "engine/hyperparallel_yaml.hpp"
#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/strategy_string.hpp"
#include "engine/trainer_export.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

namespace {

[[noreturn]] void cannot(const std::string& why) {
  throw ExportError("hyperparallel cannot express this strategy: " + why);
}

}  // namespace

TrainerConfig hyperparallel_yaml(const Model& m, const Run& run, const Strategy& s) {
  if (s.pp > 1 && s.schedule != Schedule::one_f_one_b && s.schedule != Schedule::interleaved_1f1b) {
    cannot(std::string("its pipeline runs 1F1B or interleaved 1F1B, not ") + to_string(s.schedule));
  }
  if (s.cp > 1 && s.cp_algo == CpAlgo::allgather)
    cannot("it has no all-gather context parallelism (cp_algo=allgather)");
  // Its MoE layers split every expert's weights by model_parallel: expert TP is the TP degree.
  if (m.is_moe() && s.etp != s.tp) {
    cannot("its experts are split by model_parallel, so etp must equal tp (etp=" + std::to_string(s.etp) +
           ", tp=" + std::to_string(s.tp) + ")");
  }
  if (s.offload != Offload::none) {
    cannot(std::string("its train YAML has no offload setting that meshfit writes (offload=") + to_string(s.offload) +
           ")");
  }
  if (s.tp_comm_overlap) cannot("its train YAML has no TP communication overlap setting that meshfit writes");
  std::ostringstream out;
  out << "# meshfit strategy: " << strategy_to_string(s) << '\n';
  out << "parallel_config:\n";
  out << "  data_parallel: " << s.dp << '\n';
  out << "  model_parallel: " << s.tp << '\n';
  out << "  use_seq_parallel: " << (s.sp && s.tp > 1 ? "true" : "false") << '\n';
  out << "  context_parallel: " << s.cp << '\n';
  if (s.cp > 1) {
    out << "  context_parallel_algo: "
        << (s.cp_algo == CpAlgo::ulysses  ? "ulysses_cp"
            : s.cp_algo == CpAlgo::hybrid ? "hybrid_cp"
                                          : "colossalai_cp")
        << '\n';
    if (s.cp_algo == CpAlgo::hybrid) out << "  ulysses_degree_in_cp: " << s.cp_u << '\n';
  }
  if (m.is_moe()) out << "  expert_parallel: " << s.ep << '\n';
  out << "  pipeline_stage: " << s.pp << '\n';
  out << "  micro_batch_num: " << s.num_microbatches << '\n';
  out << "parallel:\n";
  out << "  enable_parallel_optimizer: " << (s.zero >= 1 ? "true" : "false") << '\n';
  if (s.zero >= 1) {
    out << "  parallel_optimizer_config:\n";
    out << "    optimizer_level: level" << s.zero << '\n';
    out << "    optimizer_weight_shard_size: " << s.shard_group << '\n';
  }
  // A per-stage split (vpp 1, e.g. from estimate/export --balance): MindFormers' offset, each
  // stage's layers over ⌊L/pp⌋ (SAPP-ND's pipeline balance writes the same list).
  const auto& per_stage = run.options.layers_per_vstage;
  const bool offsets = s.vpp == 1 && s.pp > 1 && static_cast<std::int64_t>(per_stage.size()) == s.pp;
  if (s.vpp > 1 || offsets) out << "model:\n  model_config:\n";
  if (s.vpp > 1) out << "    pp_interleave_num: " << s.vpp << '\n';
  if (offsets) {
    std::int64_t total = 0;
    for (auto v : per_stage) total += v;
    out << "    offset: [";
    for (std::size_t i = 0; i < per_stage.size(); ++i) out << (i ? ", " : "") << per_stage[i] - total / s.pp;
    out << "]\n";
  }
  out << "runner_config:\n  batch_size: " << s.micro_batch << '\n';
  out << "recompute_config:\n";
  const auto& full_per_stage = run.options.full_layers_per_vstage;
  if (s.recompute == Recompute::full && offsets && static_cast<std::int64_t>(full_per_stage.size()) == s.pp) {
    out << "  recompute: [";  // the fully recomputed layers of each stage
    for (std::size_t i = 0; i < full_per_stage.size(); ++i) out << (i ? ", " : "") << full_per_stage[i];
    out << "]\n";
  } else if (s.recompute == Recompute::full) {
    out << "  recompute: " << (s.recompute_layers == 0 ? std::string("true") : std::to_string(s.recompute_layers))
        << '\n';
  } else {
    out << "  recompute: false\n";
  }
  out << "  select_recompute: " << (s.recompute == Recompute::selective ? "true" : "false") << '\n';
  TrainerConfig r;
  r.text = out.str();
  return r;
}

std::string strategy_string_from_train_yaml(const std::string& path) {
  const Fields root(load_yaml_file(path), path);
  const auto pc = root.optional_map("parallel_config");
  if (!pc) {
    throw InputError(path, "parallel_config",
                     "missing; expected a map (a HyperParallel / MindFormers train YAML, as `meshfit export --to "
                     "hyperparallel` writes)");
  }
  auto positive = [](const Fields& f, const char* field) { return f.optional_int(field, 1); };
  std::vector<std::string> kv;
  auto take = [&](const char* field, const char* key) {
    if (const auto v = positive(*pc, field)) kv.push_back(std::string(key) + "=" + std::to_string(*v));
  };
  take("data_parallel", "dp");
  take("model_parallel", "tp");
  take("context_parallel", "cp");
  take("expert_parallel", "ep");
  // expert_parallel is written for MoE models only, whose experts model_parallel splits.
  if (pc->has("expert_parallel") && pc->has("model_parallel")) {
    kv.push_back("etp=" + std::to_string(*positive(*pc, "model_parallel")));
  }
  take("pipeline_stage", "pp");
  take("micro_batch_num", "m");
  if (const auto sp = pc->optional_bool("use_seq_parallel"))
    kv.push_back(std::string("sp=") + (*sp ? "true" : "false"));
  if (const auto algo = pc->optional_string("context_parallel_algo")) {
    if (*algo == "colossalai_cp")
      kv.push_back("cp_algo=ring");
    else if (*algo == "ulysses_cp")
      kv.push_back("cp_algo=ulysses");
    else if (*algo == "hybrid_cp")
      kv.push_back("cp_algo=hybrid");
    else
      pc->fail("context_parallel_algo", "expected colossalai_cp, ulysses_cp or hybrid_cp, got " + quoted_text(*algo));
  }
  if (const auto u = positive(*pc, "ulysses_degree_in_cp")) kv.push_back("cp_u=" + std::to_string(*u));
  if (const auto par = root.optional_map("parallel");
      par && par->optional_bool("enable_parallel_optimizer").value_or(false)) {
    int zero = 1;
    const auto poc = par->optional_map("parallel_optimizer_config");
    if (poc) {
      if (const auto level = poc->optional_string("optimizer_level")) {
        if (*level == "level1")
          zero = 1;
        else if (*level == "level2")
          zero = 2;
        else if (*level == "level3")
          zero = 3;
        else
          poc->fail("optimizer_level", "expected level1, level2 or level3, got " + quoted_text(*level));
      }
    }
    kv.push_back("zero=" + std::to_string(zero));
    if (poc) {
      if (const auto g = positive(*poc, "optimizer_weight_shard_size"))
        kv.push_back("shard_group=" + std::to_string(*g));
    }
  }
  std::int64_t vpp = 1;
  if (const auto model = root.optional_map("model")) {
    if (const auto mc = model->optional_map("model_config")) {
      if (const auto v = positive(*mc, "pp_interleave_num")) {
        vpp = *v;
        kv.push_back("vpp=" + std::to_string(vpp));
      }
    }
  }
  if (positive(*pc, "pipeline_stage").value_or(1) > 1) {
    kv.push_back(std::string("schedule=") + (vpp > 1 ? "interleaved_1f1b" : "1f1b"));
  }
  if (const auto runner = root.optional_map("runner_config")) {
    if (const auto b = positive(*runner, "batch_size")) kv.push_back("mbs=" + std::to_string(*b));
  }
  if (const auto rc = root.optional_map("recompute_config")) {
    // recompute: true / false, or the number of fully recomputed layers.
    bool is_full = false;
    if (rc->has("recompute")) {
      const YAML::Node full = rc->raw("recompute");
      bool flag = false;
      if (full.IsScalar() && YAML::convert<bool>::decode(full, flag)) {
        is_full = flag;
        if (is_full) kv.push_back("recompute=full");
      } else if (full.IsSequence()) {
        // Per stage, the first n layers of each (what the export writes with a per-stage layout).
        // The strategy string holds one count for every stage: equal counts read back as it.
        const std::vector<std::int64_t> counts = rc->int_list("recompute", 0);
        const std::int64_t stages = positive(*pc, "pipeline_stage").value_or(1);
        if (static_cast<std::int64_t>(counts.size()) != stages) {
          rc->fail("recompute", "one count per pipeline stage (" + std::to_string(stages) + "), got " +
                                    std::to_string(counts.size()));
        }
        const bool equal = std::all_of(counts.begin(), counts.end(), [&](std::int64_t n) { return n == counts[0]; });
        if (!equal) {
          std::string list;
          for (const auto n : counts) list += (list.empty() ? "" : ", ") + std::to_string(n);
          rc->fail("recompute",
                   "the same count on every stage, which a strategy string can hold "
                   "(recompute_layers), got [" +
                       list +
                       "]; give per-stage counts as "
                       "full_layers_per_vstage in --run-options, or read the whole file with "
                       "--sapp-nd-config");
        }
        if (!counts.empty() && counts[0] > 0) {
          kv.push_back("recompute=full");
          kv.push_back("recompute_layers=" + std::to_string(counts[0]));
          is_full = true;
        }
      } else {
        kv.push_back("recompute=full");
        kv.push_back("recompute_layers=" + std::to_string(*positive(*rc, "recompute")));
        is_full = true;
      }
    }
    if (!is_full && rc->optional_bool("select_recompute").value_or(false)) kv.push_back("recompute=selective");
  }
  std::string text;
  for (const auto& item : kv) text += (text.empty() ? "" : ",") + item;
  return text;
}

}  // namespace meshfit
