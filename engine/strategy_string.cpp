#include "engine/strategy_string.hpp"

#include "engine/hyperparallel_yaml.hpp"

#include <initializer_list>
#include <map>
#include <optional>
#include <sstream>

#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/presets.hpp"
#include "engine/yaml_fields.hpp"
#include "estimators/strategy_rules.hpp"

namespace meshfit {

namespace {

const std::vector<std::string>& known_keys() {
  static const std::vector<std::string> keys = {"dp",
                                                "tp",
                                                "sp",
                                                "tp_comm_overlap",
                                                "pp",
                                                "vpp",
                                                "pp_schedule",
                                                "cp",
                                                "cp_algo",
                                                "cp_u",
                                                "ep",
                                                "etp",
                                                "zero_stage",
                                                "shard_group",
                                                "offload",
                                                "recompute",
                                                "recompute_layers",
                                                "micro_batch_size",
                                                "num_microbatches"};
  return keys;
}

std::string canonical_key(const std::string& key) {
  if (key == "zero") return "zero_stage";
  if (key == "mbs") return "micro_batch_size";
  if (key == "m") return "num_microbatches";
  if (key == "schedule") return "pp_schedule";
  return key;
}

// Every degree and count is at most 2^24, as the device count, sequence and batch flags are: a
// degree can never exceed the devices, and products of a few of them stay within 64-bit integers.
constexpr std::int64_t kMaxValue = std::int64_t{1} << 24;

// Errors name the key inside the strategy: "--strategy: field 'tp'" on the command line, the
// manifest entry's "ci.yaml: field 'entries[3].strategy.tp'".
std::string strategy_source(const InputOrigin& origin) { return origin.prefix.empty() ? "--strategy" : origin.source; }
std::string strategy_field(const InputOrigin& origin, const std::string& key) {
  return origin.prefix.empty() ? key : origin.field("strategy") + "." + key;
}

// `max` names what bounds the value ("the 64 devices"); kMaxValue when nothing else does.
std::int64_t positive(const InputOrigin& origin, const std::map<std::string, std::string>& kv, const std::string& key,
                      std::int64_t max = kMaxValue, const std::string& what = "") {
  const auto v = parse_integer(kv.at(key));
  if (!v || *v < 1 || *v > max) {
    throw InputError(strategy_source(origin), strategy_field(origin, key),
                     "expected a positive integer up to " + (what.empty() ? std::to_string(max) : what) + ", got " +
                         quoted_text(kv.at(key)));
  }
  return *v;
}

// The key=value pairs of a strategy string, with the errors that name its source and key.
struct StrategyFields {
  const InputOrigin& origin;
  std::string source;
  std::map<std::string, std::string> kv;

  bool has(const char* key) const { return kv.count(key) > 0; }
  const std::string& at(const char* key) const { return kv.at(key); }
  [[noreturn]] void fail(const std::string& key, const std::string& expected) const {
    throw InputError(source, strategy_field(origin, key), expected);
  }
  std::int64_t positive_at(const char* key, std::int64_t max = kMaxValue, const std::string& what = "") const {
    return positive(origin, kv, key, max, what);
  }
};

StrategyFields split_fields(const std::string& text, const InputOrigin& origin) {
  StrategyFields f{origin, strategy_source(origin), {}};
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    item = item.substr(first, item.find_last_not_of(" \t") - first + 1);
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw InputError(
          origin.prefix.empty()
              ? f.source + ": expected key=value, got " + quoted_text(item)
              : InputError(f.source, origin.field("strategy"), "expected key=value, got " + quoted_text(item)).what());
    }
    std::string key = canonical_key(to_lower(item.substr(0, eq)));
    const std::string value = to_lower(item.substr(eq + 1));
    if (std::find(known_keys().begin(), known_keys().end(), key) == known_keys().end()) {
      f.fail(key, "unknown key" + suggestion_text(key, known_keys()) + " (aliases: zero, mbs, m, schedule)");
    }
    if (f.kv.count(key)) f.fail(key, "given twice");
    f.kv[key] = value;
  }
  return f;
}

// One of the names a key takes, each with its value; `expected` lists them for the error.
template <class T>
T named(const StrategyFields& f, const char* key, std::initializer_list<std::pair<const char*, T>> names,
        const char* expected) {
  const std::string& v = f.at(key);
  for (const auto& [name, value] : names) {
    if (v == name) return value;
  }
  f.fail(key, std::string("expected ") + expected + ", got " + quoted_text(v));
}

// The degrees and dp, what the device count leaves (rule H1); SP canonicalised (H7).
void read_degrees(const StrategyFields& f, const Cluster& cluster, Strategy& s, std::vector<std::string>& warnings) {
  // A degree never exceeds the device count (and so no product of degrees overflows).
  const std::int64_t devices = cluster.devices;
  const std::string the_devices = "the " + std::to_string(devices) + " devices";
  auto degree = [&](const char* key) { return f.positive_at(key, devices, the_devices); };
  if (f.has("tp")) s.tp = degree("tp");
  if (f.has("pp")) s.pp = degree("pp");
  if (f.has("cp")) s.cp = degree("cp");
  if (f.has("ep")) s.ep = degree("ep");
  if (f.has("etp")) s.etp = degree("etp");
  if (f.has("sp")) s.sp = named<bool>(f, "sp", {{"true", true}, {"false", false}}, "true or false");
  if (f.has("tp_comm_overlap")) {
    s.tp_comm_overlap = named<bool>(f, "tp_comm_overlap", {{"true", true}, {"false", false}}, "true or false");
  }
  if (s.sp && s.tp == 1) {  // H7: canonicalised
    warnings.push_back("sp=true with tp=1 has no effect; treated as sp=false");
    s.sp = false;
  }
  if (s.tp * s.cp > devices || s.tp * s.cp * s.pp > devices) {  // each factor <= 2^24: no overflow
    f.fail("pp", "tp·cp·pp = " + std::to_string(s.tp) + "·" + std::to_string(s.cp) + "·" + std::to_string(s.pp) +
                     " exceeds " + the_devices);
  }
  const std::int64_t grid = s.tp * s.cp * s.pp;
  if (f.has("dp")) {
    s.dp = degree("dp");
  } else {
    if (cluster.devices % grid != 0) {
      f.fail("dp", "tp·cp·pp = " + std::to_string(grid) + " does not divide the " + std::to_string(cluster.devices) +
                       " devices");
    }
    s.dp = cluster.devices / grid;
  }
  if (s.world() != cluster.devices) {
    f.fail("dp", "dp·tp·pp·cp = " + std::to_string(s.world()) + " must equal the " + std::to_string(cluster.devices) +
                     " devices (rule H1)");
  }
}

// The pipeline schedule and chunks, then the CP algorithm and its Ulysses degree.
void read_schedule_and_cp(const StrategyFields& f, const Model& m, const Cluster& cluster, Strategy& s) {
  if (f.has("pp_schedule")) {
    s.schedule = named<Schedule>(f, "pp_schedule",
                                 {{"1f1b", Schedule::one_f_one_b},
                                  {"interleaved_1f1b", Schedule::interleaved_1f1b},
                                  {"interleaved", Schedule::interleaved_1f1b},
                                  {"gpipe", Schedule::gpipe},
                                  {"zb_h1", Schedule::zb_h1},
                                  {"zero_bubble", Schedule::zb_h1},
                                  {"dualpipev", Schedule::dualpipev},
                                  {"none", Schedule::none}},
                                 "1f1b, interleaved_1f1b, gpipe, zb_h1 or dualpipev");
  }
  if (f.has("vpp"))
    s.vpp = f.positive_at("vpp");
  else if (s.schedule == Schedule::dualpipev)
    s.vpp = 2;
  if (!f.has("pp_schedule") && s.pp > 1) {
    s.schedule = s.vpp >= 2 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
  }
  if (f.has("cp_algo")) {
    s.cp_algo = named<CpAlgo>(f, "cp_algo",
                              {{"ring", CpAlgo::ring},
                               {"ulysses", CpAlgo::ulysses},
                               {"hybrid", CpAlgo::hybrid},
                               {"allgather", CpAlgo::allgather},
                               {"none", CpAlgo::none}},
                              "ring, ulysses, hybrid or allgather");
  } else if (s.cp > 1) {
    s.cp_algo = CpAlgo::ring;
  }
  if (f.has("cp_u")) {
    s.cp_u = f.positive_at("cp_u", cluster.devices, "the " + std::to_string(cluster.devices) + " devices");
  } else if (s.cp_algo == CpAlgo::ulysses) {
    s.cp_u = s.cp;
  } else if (s.cp_algo == CpAlgo::hybrid) {
    s.cp_u = hybrid_ulysses_degree(m, s, cluster.device.placement_domain());
  }
}

// The ZeRO stage, shard group and offload, the recompute mode and layers, the micro-batch size and m (H2).
void read_zero_recompute_batch(const StrategyFields& f, const Run& run, const Cluster& cluster, Strategy& s) {
  if (f.has("zero_stage")) {
    const auto z = parse_integer(f.at("zero_stage"));
    if (!z || *z < 0 || *z > 3) f.fail("zero_stage", "expected 0, 1, 2 or 3, got " + quoted_text(f.at("zero_stage")));
    s.zero = static_cast<int>(*z);
  }
  s.shard_group = f.has("shard_group") ? f.positive_at("shard_group", cluster.devices,
                                                       "the " + std::to_string(cluster.devices) + " devices")
                                       : (s.zero >= 1 ? s.dp * s.cp : 1);
  if (f.has("offload")) {
    s.offload = named<Offload>(
        f, "offload", {{"none", Offload::none}, {"optimizer", Offload::optimizer}, {"params", Offload::params}},
        "none, optimizer or params");
  }
  if (f.has("recompute")) {
    s.recompute = named<Recompute>(
        f, "recompute", {{"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}},
        "none, selective or full");
  }
  if (f.has("recompute_layers")) s.recompute_layers = f.positive_at("recompute_layers");
  const std::string the_batch = "the global batch " + std::to_string(run.global_batch);
  s.micro_batch = f.has("micro_batch_size") ? f.positive_at("micro_batch_size", run.global_batch, the_batch)
                                            : (run.micro_batch > 0 ? run.micro_batch : 1);
  const std::int64_t per_step = s.dp * s.micro_batch;  // <= 2^48
  if (per_step > run.global_batch) {  // checked before m multiplies it (rule H2: global batch = dp·mbs·m)
    f.fail("micro_batch_size", "dp·mbs = " + std::to_string(per_step) + " exceeds " + the_batch + " (rule H2)");
  }
  if (f.has("num_microbatches")) {
    s.num_microbatches = f.positive_at("num_microbatches", run.global_batch, the_batch);
  } else {
    if (run.global_batch % per_step != 0) {
      f.fail("num_microbatches", "dp·mbs = " + std::to_string(per_step) + " does not divide the global batch " +
                                     std::to_string(run.global_batch) + " (rule H2)");
    }
    s.num_microbatches = run.global_batch / per_step;
  }
}

}  // namespace

Strategy parse_strategy(const std::string& given, const Model& m, const Run& run, const Cluster& cluster,
                        std::vector<std::string>& warnings, bool check_rules, const InputOrigin& origin) {
  // A path to a train YAML (what `meshfit export --to hyperparallel` writes) stands for the
  // strategy it describes.
  const bool yaml_path = given.find('=') == std::string::npos && (given.ends_with(".yaml") || given.ends_with(".yml"));
  const StrategyFields f = split_fields(yaml_path ? strategy_string_from_train_yaml(given) : given, origin);
  Strategy s;
  read_degrees(f, cluster, s, warnings);
  read_schedule_and_cp(f, m, cluster, s);
  read_zero_recompute_batch(f, run, cluster, s);
  const HardRule broken = check_rules ? first_broken_rule(m, run, cluster, s) : HardRule::ok;
  if (broken != HardRule::ok) {
    throw InputError(f.source + (origin.prefix.empty() ? "" : ": " + origin.field("strategy")) +
                     ": invalid strategy for " + m.name + ": " + explain_rule(broken, m, run, cluster, s));
  }
  return s;
}

void write_strategy_json(JsonWriter& j, const Strategy& s) {
  j.begin_object().field("dp", s.dp).field("tp", s.tp).field("sp", s.sp).field("tp_comm_overlap", s.tp_comm_overlap);
  j.field("pp", s.pp).field("vpp", s.vpp);
  j.key("pp_schedule");
  if (s.schedule == Schedule::none)
    j.null();
  else
    j.value(to_string(s.schedule));
  j.field("cp", s.cp);
  j.key("cp_algo");
  if (s.cp_algo == CpAlgo::none)
    j.null();
  else
    j.value(to_string(s.cp_algo));
  j.field("ep", s.ep).field("etp", s.etp).field("zero_stage", s.zero).field("shard_group", s.shard_group);
  j.field("offload", to_string(s.offload));
  j.field("recompute", to_string(s.recompute));
  j.key("recompute_layers");
  if (s.recompute == Recompute::full && s.recompute_layers > 0)
    j.value(s.recompute_layers);
  else
    j.null();
  j.field("micro_batch_size", s.micro_batch).field("num_microbatches", s.num_microbatches);
  j.field("cp_u", s.cp_u);
  j.end_object();
}

std::vector<StrategyDim> strategy_dims(const Strategy& s) {
  const Schedule implied = s.pp == 1 ? Schedule::none : s.vpp >= 2 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
  const std::int64_t implied_vpp = s.schedule == Schedule::dualpipev ? 2 : 1;
  auto num = [](std::int64_t v) { return std::to_string(v); };
  std::vector<StrategyDim> d = {
      {"dp", num(s.dp), false},
      {"tp", num(s.tp), false},
      {"sp", s.sp ? "true" : "false", !s.sp},
      {"tp_comm_overlap", s.tp_comm_overlap ? "true" : "false", !s.tp_comm_overlap},
      {"pp", num(s.pp), false},
      {"vpp", num(s.vpp), s.vpp == implied_vpp},
      {"schedule", s.schedule == Schedule::none ? "none" : to_string(s.schedule), s.schedule == implied},
      {"cp", num(s.cp), s.cp == 1},
      {"cp_algo", s.cp_algo == CpAlgo::none ? "none" : to_string(s.cp_algo), s.cp_algo == CpAlgo::none},
      // parse_strategy derives a hybrid's Ulysses degree without the search's policies: always written.
      {"cp_u", num(s.cp_u), s.cp_algo != CpAlgo::hybrid},
      {"ep", num(s.ep), s.ep == 1},
      {"etp", num(s.etp), s.etp == 1},
      {"zero", num(s.zero), s.zero == 0},
      {"shard_group", num(s.shard_group), s.zero == 0 || s.shard_group == s.dp * s.cp},
      {"offload", to_string(s.offload), s.offload == Offload::none},
      {"recompute", to_string(s.recompute), s.recompute == Recompute::none},
      {"recompute_layers", num(s.recompute_layers), s.recompute != Recompute::full || s.recompute_layers == 0},
      {"mbs", num(s.micro_batch), false},
      {"m", num(s.num_microbatches), false},
  };
  return d;
}

std::string strategy_to_string(const Strategy& s) {
  std::string out;
  for (const StrategyDim& d : strategy_dims(s)) {
    if (!d.neutral) out += (out.empty() ? "" : ",") + std::string(d.key) + "=" + d.value;
  }
  return out;
}

std::string full_strategy_string(const Strategy& s) {
  std::string out;
  for (const StrategyDim& d : strategy_dims(s)) out += (out.empty() ? "" : ",") + std::string(d.key) + "=" + d.value;
  return out;
}

}  // namespace meshfit
