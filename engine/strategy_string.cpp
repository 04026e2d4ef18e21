#include "engine/strategy_string.hpp"

#include "engine/hyperparallel_yaml.hpp"

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

}  // namespace

Strategy parse_strategy(const std::string& given, const Model& m, const Run& run, const Cluster& cluster,
                        std::vector<std::string>& warnings, bool check_rules, const InputOrigin& origin) {
  const std::string source = strategy_source(origin);
  const auto fail = [&](const std::string& key, const std::string& expected) {
    throw InputError(source, strategy_field(origin, key), expected);
  };
  // A path to a train YAML (what `meshfit export --to hyperparallel` writes) stands for the
  // strategy it describes.
  const bool yaml_path = given.find('=') == std::string::npos && (given.ends_with(".yaml") || given.ends_with(".yml"));
  const std::string text = yaml_path ? strategy_string_from_train_yaml(given) : given;
  std::map<std::string, std::string> kv;
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
              ? source + ": expected key=value, got " + quoted_text(item)
              : InputError(source, origin.field("strategy"), "expected key=value, got " + quoted_text(item)).what());
    }
    std::string key = canonical_key(to_lower(item.substr(0, eq)));
    const std::string value = to_lower(item.substr(eq + 1));
    if (std::find(known_keys().begin(), known_keys().end(), key) == known_keys().end()) {
      fail(key, "unknown key" + suggestion_text(key, known_keys()) + " (aliases: zero, mbs, m, schedule)");
    }
    if (kv.count(key)) fail(key, "given twice");
    kv[key] = value;
  }
  auto has = [&](const char* k) { return kv.count(k) > 0; };

  // A degree never exceeds the device count (and so no product of degrees overflows).
  const std::int64_t devices = cluster.devices;
  const std::string the_devices = "the " + std::to_string(devices) + " devices";
  auto degree = [&](const char* key) { return positive(origin, kv, key, devices, the_devices); };
  Strategy s;
  if (has("tp")) s.tp = degree("tp");
  if (has("pp")) s.pp = degree("pp");
  if (has("cp")) s.cp = degree("cp");
  if (has("ep")) s.ep = degree("ep");
  if (has("etp")) s.etp = degree("etp");
  if (has("sp")) {
    if (kv["sp"] != "true" && kv["sp"] != "false") fail("sp", "expected true or false, got " + quoted_text(kv["sp"]));
    s.sp = kv["sp"] == "true";
  }
  if (s.sp && s.tp == 1) {  // H7: canonicalised
    warnings.push_back("sp=true with tp=1 has no effect; treated as sp=false");
    s.sp = false;
  }
  // dp: what the device count leaves.
  if (s.tp * s.cp > devices || s.tp * s.cp * s.pp > devices) {  // each factor <= 2^24: no overflow
    fail("pp", "tp·cp·pp = " + std::to_string(s.tp) + "·" + std::to_string(s.cp) + "·" + std::to_string(s.pp) +
                   " exceeds " + the_devices);
  }
  const std::int64_t grid = s.tp * s.cp * s.pp;
  if (has("dp")) {
    s.dp = degree("dp");
  } else {
    if (cluster.devices % grid != 0) {
      fail("dp", "tp·cp·pp = " + std::to_string(grid) + " does not divide the " + std::to_string(cluster.devices) +
                     " devices");
    }
    s.dp = cluster.devices / grid;
  }
  if (s.world() != cluster.devices) {
    fail("dp", "dp·tp·pp·cp = " + std::to_string(s.world()) + " must equal the " + std::to_string(cluster.devices) +
                   " devices (rule H1)");
  }
  // Schedule and chunks.
  if (has("pp_schedule")) {
    const std::string v = kv["pp_schedule"];
    if (v == "1f1b")
      s.schedule = Schedule::one_f_one_b;
    else if (v == "interleaved_1f1b" || v == "interleaved")
      s.schedule = Schedule::interleaved_1f1b;
    else if (v == "gpipe")
      s.schedule = Schedule::gpipe;
    else if (v == "zb_h1" || v == "zero_bubble")
      s.schedule = Schedule::zb_h1;
    else if (v == "dualpipev")
      s.schedule = Schedule::dualpipev;
    else if (v == "none")
      s.schedule = Schedule::none;
    else
      fail("pp_schedule", "expected 1f1b, interleaved_1f1b, gpipe, zb_h1 or dualpipev, got " + quoted_text(v));
  }
  if (has("vpp"))
    s.vpp = positive(origin, kv, "vpp");
  else if (s.schedule == Schedule::dualpipev)
    s.vpp = 2;
  if (!has("pp_schedule") && s.pp > 1) {
    s.schedule = s.vpp >= 2 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
  }
  // Context parallelism.
  if (has("cp_algo")) {
    const std::string v = kv["cp_algo"];
    if (v == "ring")
      s.cp_algo = CpAlgo::ring;
    else if (v == "ulysses")
      s.cp_algo = CpAlgo::ulysses;
    else if (v == "hybrid")
      s.cp_algo = CpAlgo::hybrid;
    else if (v == "allgather")
      s.cp_algo = CpAlgo::allgather;
    else if (v == "none")
      s.cp_algo = CpAlgo::none;
    else
      fail("cp_algo", "expected ring, ulysses, hybrid or allgather, got " + quoted_text(v));
  } else if (s.cp > 1) {
    s.cp_algo = CpAlgo::ring;
  }
  if (has("cp_u")) {
    s.cp_u = degree("cp_u");
  } else if (s.cp_algo == CpAlgo::ulysses) {
    s.cp_u = s.cp;
  } else if (s.cp_algo == CpAlgo::hybrid) {
    s.cp_u = hybrid_ulysses_degree(m, s, cluster.device.devices_per_node);
  }
  // ZeRO.
  if (has("zero_stage")) {
    const auto z = parse_integer(kv["zero_stage"]);
    if (!z || *z < 0 || *z > 3) fail("zero_stage", "expected 0, 1, 2 or 3, got " + quoted_text(kv["zero_stage"]));
    s.zero = static_cast<int>(*z);
  }
  s.shard_group = has("shard_group") ? degree("shard_group") : (s.zero >= 1 ? s.dp * s.cp : 1);
  // Recompute.
  if (has("recompute")) {
    const std::string v = kv["recompute"];
    if (v == "none")
      s.recompute = Recompute::none;
    else if (v == "selective")
      s.recompute = Recompute::selective;
    else if (v == "full")
      s.recompute = Recompute::full;
    else
      fail("recompute", "expected none, selective or full, got " + quoted_text(v));
  }
  if (has("recompute_layers")) s.recompute_layers = positive(origin, kv, "recompute_layers");
  // Batch.
  const std::string the_batch = "the global batch " + std::to_string(run.global_batch);
  s.micro_batch = has("micro_batch_size") ? positive(origin, kv, "micro_batch_size", run.global_batch, the_batch)
                                          : (run.micro_batch > 0 ? run.micro_batch : 1);
  const std::int64_t per_step = s.dp * s.micro_batch;  // <= 2^48
  if (per_step > run.global_batch) {  // checked before m multiplies it (rule H2: global batch = dp·mbs·m)
    fail("micro_batch_size", "dp·mbs = " + std::to_string(per_step) + " exceeds " + the_batch + " (rule H2)");
  }
  if (has("num_microbatches")) {
    s.num_microbatches = positive(origin, kv, "num_microbatches", run.global_batch, the_batch);
  } else {
    if (run.global_batch % per_step != 0) {
      fail("num_microbatches", "dp·mbs = " + std::to_string(per_step) + " does not divide the global batch " +
                                   std::to_string(run.global_batch) + " (rule H2)");
    }
    s.num_microbatches = run.global_batch / per_step;
  }

  const HardRule broken = check_rules ? first_broken_rule(m, run, cluster, s) : HardRule::ok;
  if (broken != HardRule::ok) {
    throw InputError(source + (origin.prefix.empty() ? "" : ": " + origin.field("strategy")) +
                     ": invalid strategy for " + m.name + ": " + explain_rule(broken, m, run, cluster, s));
  }
  return s;
}

void write_strategy_json(JsonWriter& j, const Strategy& s) {
  j.begin_object().field("dp", s.dp).field("tp", s.tp).field("sp", s.sp).field("pp", s.pp).field("vpp", s.vpp);
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

std::string strategy_to_string(const Strategy& s) {
  std::ostringstream o;
  o << "dp=" << s.dp << ",tp=" << s.tp << ",sp=" << (s.sp ? "true" : "false") << ",pp=" << s.pp << ",vpp=" << s.vpp;
  if (s.schedule != Schedule::none) o << ",schedule=" << to_string(s.schedule);
  o << ",cp=" << s.cp;
  if (s.cp_algo != CpAlgo::none) o << ",cp_algo=" << to_string(s.cp_algo);
  if (s.cp_algo == CpAlgo::hybrid) o << ",cp_u=" << s.cp_u;
  o << ",ep=" << s.ep << ",etp=" << s.etp << ",zero=" << s.zero;
  if (s.zero >= 1) o << ",shard_group=" << s.shard_group;
  o << ",recompute=" << to_string(s.recompute);
  if (s.recompute == Recompute::full && s.recompute_layers > 0) o << ",recompute_layers=" << s.recompute_layers;
  o << ",mbs=" << s.micro_batch << ",m=" << s.num_microbatches;
  return o.str();
}

}  // namespace meshfit
