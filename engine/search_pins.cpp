#include "engine/search_pins.hpp"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

namespace {

// "8", "1,2,4": a list of positive integers for a pinned dimension.
std::vector<std::int64_t> int_list(const std::string& flag, const std::string& text, std::int64_t min = 1) {
  std::vector<std::int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto v = parse_integer(item);
    if (!v || *v < min)
      throw InputError(
          "command line", flag,
          "expected a comma-separated list of integers >= " + std::to_string(min) + ", got " + quoted_text(text));
    out.push_back(*v);
  }
  return out;
}

template <class T>
std::vector<T> name_list(const std::string& flag, const std::string& text,
                         const std::vector<std::pair<std::string, T>>& names) {
  std::vector<T> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto it = std::find_if(names.begin(), names.end(), [&](const auto& p) { return p.first == item; });
    if (it == names.end()) {
      std::string all;
      for (const auto& p : names) all += (all.empty() ? "" : ", ") + p.first;
      throw InputError("command line", flag, "expected one or more of " + all + ", got " + quoted_text(item));
    }
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

void add_pin_options(po::options_description& desc, PinFlags& f) {
  desc.add_options()("tp", po::value(&f.tp), "pin tensor parallelism (list: 4,8)")(
      "cp", po::value(&f.cp), "pin context parallelism")("pp", po::value(&f.pp), "pin pipeline stages")(
      "vpp", po::value(&f.vpp), "pin model chunks per pipeline rank")("ep", po::value(&f.ep), "pin expert parallelism")(
      "etp", po::value(&f.etp), "pin expert tensor parallelism")(
      "zero", po::value(&f.zero), "pin ZeRO stages (0,1,2,3)")("shard-group", po::value(&f.shard_group),
                                                               "pin ZeRO shard groups")("mbs", po::value(&f.mbs),
                                                                                        "pin micro-batch sizes")(
      "sp", po::value(&f.sp), "pin sequence parallelism: true, false or both")("cp-algo", po::value(&f.cp_algo),
                                                                               "ring, ulysses, hybrid, allgather")(
      "schedule", po::value(&f.schedule), "1f1b, interleaved_1f1b, gpipe, zb_h1, dualpipev")(
      "recompute", po::value(&f.recompute), "none, selective, full")(
      "offload", po::value(&f.offload), "also search offload: none, optimizer, params (default none only)")(
      "tp-comm-overlap", po::value(&f.tp_comm_overlap),
      "also search TP communication overlap: false, true or both (default false only)")(
      "policies", po::value(&f.policies), "switch policies: tp_in_node=off,even_split=on,...");
}

void apply_pin_flags(const PinFlags& f, Pins& pins, PolicySet& policies) {
  if (!f.tp.empty()) pins.tp = int_list("--tp", f.tp);
  if (!f.cp.empty()) pins.cp = int_list("--cp", f.cp);
  if (!f.pp.empty()) pins.pp = int_list("--pp", f.pp);
  if (!f.vpp.empty()) pins.vpp = int_list("--vpp", f.vpp);
  if (!f.ep.empty()) pins.ep = int_list("--ep", f.ep);
  if (!f.etp.empty()) pins.etp = int_list("--etp", f.etp);
  if (!f.zero.empty()) pins.zero = int_list("--zero", f.zero, 0);
  if (!f.shard_group.empty()) pins.shard_group = int_list("--shard-group", f.shard_group);
  if (!f.mbs.empty()) pins.micro_batch = int_list("--mbs", f.mbs);
  if (f.sp == "both") pins.sp.clear();
  if (!f.sp.empty() && f.sp != "both") pins.sp = name_list<bool>("--sp", f.sp, {{"true", true}, {"false", false}});
  if (!f.cp_algo.empty()) {
    pins.cp_algo = name_list<CpAlgo>("--cp-algo", f.cp_algo,
                                     {{"ring", CpAlgo::ring},
                                      {"ulysses", CpAlgo::ulysses},
                                      {"hybrid", CpAlgo::hybrid},
                                      {"allgather", CpAlgo::allgather}});
  }
  if (!f.schedule.empty()) {
    pins.schedule = name_list<Schedule>("--schedule", f.schedule,
                                        {{"1f1b", Schedule::one_f_one_b},
                                         {"interleaved_1f1b", Schedule::interleaved_1f1b},
                                         {"gpipe", Schedule::gpipe},
                                         {"zb_h1", Schedule::zb_h1},
                                         {"dualpipev", Schedule::dualpipev}});
  }
  if (!f.recompute.empty()) {
    pins.recompute = name_list<Recompute>(
        "--recompute", f.recompute,
        {{"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}});
  }
  if (!f.offload.empty()) {
    pins.offload =
        name_list<Offload>("--offload", f.offload,
                           {{"none", Offload::none}, {"optimizer", Offload::optimizer}, {"params", Offload::params}});
  }
  if (f.tp_comm_overlap == "both") pins.tp_comm_overlap = {false, true};
  if (!f.tp_comm_overlap.empty() && f.tp_comm_overlap != "both") {
    pins.tp_comm_overlap = name_list<bool>("--tp-comm-overlap", f.tp_comm_overlap, {{"true", true}, {"false", false}});
  }
  if (!f.policies.empty()) {
    std::stringstream in(f.policies);
    std::string item;
    while (std::getline(in, item, ',')) {
      const auto eq = item.find('=');
      const auto pol = policy_by_name(item.substr(0, eq));
      const std::string state = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (!pol || (state != "on" && state != "off")) {
        throw InputError("command line", "--policies",
                         "expected name=on|off with names tp_in_node, tpcp_in_node, ep_in_node, powers_of_two, "
                         "sp_with_tp, even_split, m_ge_pp, kv_heads_divisible, ulysses_kv_divisible, cp_min_tokens, "
                         "hsdp_candidates, full_recompute_all, megatron_target, trainer_target; got " +
                             quoted_text(item));
      }
      policies.on[static_cast<std::size_t>(*pol)] = state == "on";
    }
  }
}

}  // namespace meshfit
