#include "engine/search_file.hpp"

#include <algorithm>
#include <limits>

#include "engine/cli_options.hpp"
#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

namespace {

const char* const kDimensionKeys[] = {"tp",
                                      "sp",
                                      "cp",
                                      "cp_algo",
                                      "pp",
                                      "vpp",
                                      "pp_schedule",
                                      "ep",
                                      "etp",
                                      "zero_stage",
                                      "shard_group",
                                      "offload",
                                      "recompute",
                                      "micro_batch_size",
                                      "tp_comm_overlap"};

// The strategy object's names (cli.md) and the flags' short forms.
std::string canonical(const std::string& key) {
  if (key == "zero") return "zero_stage";
  if (key == "schedule") return "pp_schedule";
  if (key == "mbs") return "micro_batch_size";
  return key;
}

// The value of a dimension as a list of scalars: `auto` (or absent) gives none.
std::vector<std::string> items(const Fields& f, const std::string& key) {
  const YAML::Node n = f.raw(key);
  std::vector<std::string> out;
  if (n.IsScalar()) {
    if (n.Scalar() != "auto") out.push_back(n.Scalar());
    return out;
  }
  if (!n.IsSequence() || n.size() == 0) f.fail(key, "expected auto, one value or a non-empty list");
  for (const auto& item : n) {
    if (!item.IsScalar()) f.fail(key, "expected auto, one value or a list of values; got a nested element");
    out.push_back(item.Scalar());
  }
  return out;
}

std::vector<std::int64_t> ints(const Fields& f, const std::string& key, std::int64_t min) {
  std::vector<std::int64_t> out;
  for (const auto& text : items(f, key)) {
    const auto v = parse_integer(text);
    if (!v || *v < min)
      f.fail(key,
             "expected auto, an integer >= " + std::to_string(min) + " or a list of them; got " + quoted_text(text));
    out.push_back(*v);
  }
  return out;
}

template <class T>
std::vector<T> names(const Fields& f, const std::string& key, const std::vector<std::pair<std::string, T>>& allowed) {
  std::vector<T> out;
  for (const auto& text : items(f, key)) {
    const auto it = std::find_if(allowed.begin(), allowed.end(), [&](const auto& p) { return p.first == text; });
    if (it == allowed.end()) {
      std::string all;
      for (const auto& p : allowed) all += (all.empty() ? "" : ", ") + p.first;
      f.fail(key, "expected auto, one of " + all + " or a list of them; got " + quoted_text(text));
    }
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

SearchFile load_search_file(const std::string& path) {
  const YAML::Node doc = load_yaml_file(path);
  if (!doc.IsMap())
    throw InputError(path, "(document)", "expected a map of dimensions, policies, headroom, top, run_options");
  SearchFile sf;
  sf.source = path;
  // Aliases first, so that a key given twice (zero and zero_stage) is caught.
  YAML::Node node(YAML::NodeType::Map);
  std::vector<std::string> allowed(std::begin(kDimensionKeys), std::end(kDimensionKeys));
  for (const char* k : {"policies", "headroom", "top", "dedupe_ties", "run_options"}) allowed.emplace_back(k);
  for (const auto& kv : doc) {
    const std::string key = kv.first.as<std::string>();
    const std::string name = canonical(key);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::string all;
      for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
      throw InputError(path, key, "unknown field; expected one of " + all + " (aliases: zero, schedule, mbs)");
    }
    if (node[name]) throw InputError(path, key, "given twice (as " + quoted_text(name) + " and an alias)");
    node[name] = kv.second;
  }
  const Fields f(node, path);
  Pins& p = sf.pins;
  if (f.has("tp")) p.tp = ints(f, "tp", 1);
  if (f.has("cp")) p.cp = ints(f, "cp", 1);
  if (f.has("pp")) p.pp = ints(f, "pp", 1);
  if (f.has("vpp")) p.vpp = ints(f, "vpp", 1);
  if (f.has("ep")) p.ep = ints(f, "ep", 1);
  if (f.has("etp")) p.etp = ints(f, "etp", 1);
  if (f.has("zero_stage")) p.zero = ints(f, "zero_stage", 0);
  if (f.has("shard_group")) p.shard_group = ints(f, "shard_group", 1);
  if (f.has("micro_batch_size")) p.micro_batch = ints(f, "micro_batch_size", 1);
  if (f.has("sp")) p.sp = names<bool>(f, "sp", {{"true", true}, {"false", false}});
  if (f.has("cp_algo")) {
    p.cp_algo = names<CpAlgo>(f, "cp_algo",
                              {{"ring", CpAlgo::ring},
                               {"ulysses", CpAlgo::ulysses},
                               {"hybrid", CpAlgo::hybrid},
                               {"allgather", CpAlgo::allgather}});
  }
  if (f.has("pp_schedule")) {
    p.schedule = names<Schedule>(f, "pp_schedule",
                                 {{"1f1b", Schedule::one_f_one_b},
                                  {"interleaved_1f1b", Schedule::interleaved_1f1b},
                                  {"gpipe", Schedule::gpipe},
                                  {"zb_h1", Schedule::zb_h1},
                                  {"dualpipev", Schedule::dualpipev}});
  }
  if (f.has("offload")) {
    p.offload = names<Offload>(
        f, "offload", {{"none", Offload::none}, {"optimizer", Offload::optimizer}, {"params", Offload::params}});
  }
  if (f.has("tp_comm_overlap"))
    p.tp_comm_overlap = names<bool>(f, "tp_comm_overlap", {{"true", true}, {"false", false}});
  if (f.has("recompute")) {
    p.recompute = names<Recompute>(
        f, "recompute", {{"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}});
  }
  if (f.has("policies")) {
    const YAML::Node pol = f.raw("policies");
    if (!pol.IsMap()) f.fail("policies", "expected a map of policy names to on or off (policies: {tp_in_node: off})");
    for (const auto& kv : pol) {
      const std::string name = kv.first.as<std::string>();
      const auto policy = policy_by_name(name);
      if (!policy) {
        std::string all;
        for (std::size_t i = 0; i < kPolicyCount; ++i)
          all += (all.empty() ? "" : ", ") + std::string(policy_name(static_cast<Policy>(i)));
        throw InputError(path, "policies." + name, "unknown policy; expected one of " + all);
      }
      // YAML 1.1 readers see on/off as booleans; yaml-cpp keeps the text, so both spellings work.
      const std::string state = kv.second.IsScalar() ? kv.second.Scalar() : "";
      const bool on = state == "on" || state == "true";
      if (!on && state != "off" && state != "false")
        throw InputError(path, "policies." + name, "expected on or off, got " + quoted_text(state));
      sf.policies.emplace_back(*policy, on);
    }
  }
  if (f.has("headroom")) {
    sf.headroom = *f.optional_string("headroom");
    try {
      // The form only; the device's capacity comes later.
      parse_headroom(*sf.headroom, std::numeric_limits<double>::infinity());
    } catch (const InputError&) {
      f.fail("headroom", "expected a percentage below 100% (10%) or a number of GiB >= 0, got '" + *sf.headroom + "'");
    }
  }
  sf.dedupe_ties = f.optional_bool("dedupe_ties").value_or(false);
  if (f.has("top")) {
    const std::int64_t top = *f.optional_int("top", 1);
    if (top > kMaxTop) f.fail("top", "expected at most " + std::to_string(kMaxTop) + ", got " + std::to_string(top));
    sf.top = static_cast<std::size_t>(top);
  }
  if (f.has("run_options")) {
    sf.run_options = f.raw("run_options");
    if (!sf.run_options.IsMap()) f.fail("run_options", "expected a map of run options (memory-model.md §2.4 names)");
  }
  return sf;
}

}  // namespace meshfit
