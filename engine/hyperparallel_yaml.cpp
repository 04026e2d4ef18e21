// The HyperParallel / SAPP-ND style train YAML (MindFormers' parallel_config, as SAPP-ND reads
// it): parallel_config {data_parallel, model_parallel, context_parallel, context_parallel_algo,
// ulysses_degree_in_cp, expert_parallel, pipeline_stage, micro_batch_num, use_seq_parallel},
// parallel {enable_parallel_optimizer, parallel_optimizer_config {optimizer_level,
// optimizer_weight_shard_size}}, model.model_config.pp_interleave_num, runner_config.batch_size,
// recompute_config {recompute, select_recompute}. Experts are split by model_parallel (etp = tp). meshfit reads its own export back
// (strategy_string_from_train_yaml), so a strategy can travel as this file.
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "engine/hyperparallel_yaml.hpp"
#include "engine/input_error.hpp"
#include "engine/strategy_string.hpp"
#include "engine/trainer_export.hpp"

namespace meshfit {

namespace {

[[noreturn]] void cannot(const std::string& why) { throw ExportError("hyperparallel cannot express this strategy: " + why); }

}  // namespace

TrainerConfig hyperparallel_yaml(const Model& m, const Run&, const Strategy& s) {
  if (s.pp > 1 && s.schedule != Schedule::one_f_one_b && s.schedule != Schedule::interleaved_1f1b) {
    cannot(std::string("its pipeline runs 1F1B or interleaved 1F1B, not ") + to_string(s.schedule));
  }
  if (s.cp > 1 && s.cp_algo == CpAlgo::allgather) cannot("it has no all-gather context parallelism (cp_algo=allgather)");
  // Its MoE layers split every expert's weights by model_parallel: expert TP is the TP degree.
  if (m.is_moe() && s.etp != s.tp) {
    cannot("its experts are split by model_parallel, so etp must equal tp (etp=" + std::to_string(s.etp) + ", tp=" +
           std::to_string(s.tp) + ")");
  }
  std::ostringstream out;
  out << "# meshfit strategy: " << strategy_to_string(s) << '\n';
  out << "parallel_config:\n";
  out << "  data_parallel: " << s.dp << '\n';
  out << "  model_parallel: " << s.tp << '\n';
  out << "  use_seq_parallel: " << (s.sp && s.tp > 1 ? "true" : "false") << '\n';
  out << "  context_parallel: " << s.cp << '\n';
  if (s.cp > 1) {
    out << "  context_parallel_algo: "
        << (s.cp_algo == CpAlgo::ulysses ? "ulysses_cp" : s.cp_algo == CpAlgo::hybrid ? "hybrid_cp" : "colossalai_cp") << '\n';
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
  if (s.vpp > 1) out << "model:\n  model_config:\n    pp_interleave_num: " << s.vpp << '\n';
  out << "runner_config:\n  batch_size: " << s.micro_batch << '\n';
  out << "recompute_config:\n";
  if (s.recompute == Recompute::full) {
    out << "  recompute: " << (s.recompute_layers == 0 ? std::string("true") : std::to_string(s.recompute_layers)) << '\n';
  } else {
    out << "  recompute: false\n";
  }
  out << "  select_recompute: " << (s.recompute == Recompute::selective ? "true" : "false") << '\n';
  TrainerConfig r;
  r.text = out.str();
  return r;
}

std::string strategy_string_from_train_yaml(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InputError(path + ": cannot read the file");
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": not valid YAML: " + e.what());
  }
  if (!root.IsMap() || !root["parallel_config"] || !root["parallel_config"].IsMap()) {
    throw InputError(path, "parallel_config", "a map (a HyperParallel / MindFormers train YAML, as `meshfit export --to hyperparallel` writes)");
  }
  auto integer = [&](const YAML::Node& n, const std::string& field) -> std::int64_t {
    try {
      const auto v = n.as<std::int64_t>();
      if (v < 1) throw InputError(path, field, "a positive integer, got " + std::to_string(v));
      return v;
    } catch (const YAML::Exception&) {
      throw InputError(path, field, "a positive integer");
    }
  };
  auto boolean = [&](const YAML::Node& n, const std::string& field) {
    try {
      return n.as<bool>();
    } catch (const YAML::Exception&) {
      throw InputError(path, field, "true or false");
    }
  };
  std::vector<std::string> kv;
  const YAML::Node pc = root["parallel_config"];
  auto take = [&](const char* field, const char* key) {
    if (pc[field]) kv.push_back(std::string(key) + "=" + std::to_string(integer(pc[field], std::string("parallel_config.") + field)));
  };
  take("data_parallel", "dp");
  take("model_parallel", "tp");
  take("context_parallel", "cp");
  take("expert_parallel", "ep");
  // expert_parallel is written for MoE models only, whose experts model_parallel splits.
  if (pc["expert_parallel"] && pc["model_parallel"]) {
    kv.push_back("etp=" + std::to_string(integer(pc["model_parallel"], "parallel_config.model_parallel")));
  }
  take("pipeline_stage", "pp");
  take("micro_batch_num", "m");
  if (pc["use_seq_parallel"]) kv.push_back(std::string("sp=") + (boolean(pc["use_seq_parallel"], "parallel_config.use_seq_parallel") ? "true" : "false"));
  if (pc["context_parallel_algo"]) {
    const std::string algo = pc["context_parallel_algo"].as<std::string>("");
    if (algo == "colossalai_cp") kv.push_back("cp_algo=ring");
    else if (algo == "ulysses_cp") kv.push_back("cp_algo=ulysses");
    else if (algo == "hybrid_cp") kv.push_back("cp_algo=hybrid");
    else throw InputError(path, "parallel_config.context_parallel_algo", "colossalai_cp, ulysses_cp or hybrid_cp, got '" + algo + "'");
  }
  if (pc["ulysses_degree_in_cp"]) kv.push_back("cp_u=" + std::to_string(integer(pc["ulysses_degree_in_cp"], "parallel_config.ulysses_degree_in_cp")));
  const YAML::Node par = root["parallel"];
  if (par && par["enable_parallel_optimizer"] && boolean(par["enable_parallel_optimizer"], "parallel.enable_parallel_optimizer")) {
    int zero = 1;
    const YAML::Node poc = par["parallel_optimizer_config"];
    if (poc && poc["optimizer_level"]) {
      const std::string level = poc["optimizer_level"].as<std::string>("");
      if (level == "level1") zero = 1;
      else if (level == "level2") zero = 2;
      else if (level == "level3") zero = 3;
      else throw InputError(path, "parallel.parallel_optimizer_config.optimizer_level", "level1, level2 or level3, got '" + level + "'");
    }
    kv.push_back("zero=" + std::to_string(zero));
    if (poc && poc["optimizer_weight_shard_size"]) {
      kv.push_back("shard_group=" + std::to_string(integer(poc["optimizer_weight_shard_size"], "parallel.parallel_optimizer_config.optimizer_weight_shard_size")));
    }
  }
  std::int64_t vpp = 1;
  if (root["model"] && root["model"]["model_config"] && root["model"]["model_config"]["pp_interleave_num"]) {
    vpp = integer(root["model"]["model_config"]["pp_interleave_num"], "model.model_config.pp_interleave_num");
    kv.push_back("vpp=" + std::to_string(vpp));
  }
  if (pc["pipeline_stage"] && integer(pc["pipeline_stage"], "parallel_config.pipeline_stage") > 1) {
    kv.push_back(std::string("schedule=") + (vpp > 1 ? "interleaved_1f1b" : "1f1b"));
  }
  if (root["runner_config"] && root["runner_config"]["batch_size"]) {
    kv.push_back("mbs=" + std::to_string(integer(root["runner_config"]["batch_size"], "runner_config.batch_size")));
  }
  const YAML::Node rc = root["recompute_config"];
  if (rc) {
    const YAML::Node full = rc["recompute"];
    bool is_full = false;
    if (full) {
      std::int64_t layers = 0;
      bool flag = false;
      if (YAML::convert<bool>::decode(full, flag)) {
        is_full = flag;
      } else {
        layers = integer(full, "recompute_config.recompute");
        is_full = true;
      }
      if (is_full) {
        kv.push_back("recompute=full");
        if (layers > 0) kv.push_back("recompute_layers=" + std::to_string(layers));
      }
    }
    if (!is_full && rc["select_recompute"] && boolean(rc["select_recompute"], "recompute_config.select_recompute")) {
      kv.push_back("recompute=selective");
    }
  }
  std::string text;
  for (const auto& item : kv) text += (text.empty() ? "" : ",") + item;
  return text;
}

}  // namespace meshfit
