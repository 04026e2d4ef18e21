#include "engine/cli_options.hpp"

#include <algorithm>
#include <initializer_list>
#include <iomanip>
#include <optional>
#include <utility>
#include <sstream>
#include <cstdint>
#include <cstdlib>

#include "engine/device_config.hpp"
#include "engine/input_error.hpp"
#include "engine/presets.hpp"
#include "engine/utf8_text.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

void add_common_options(po::options_description& desc, CommonFlags& flags) {
  desc.add_options()("format", po::value(&flags.format)->default_value("table"), "output format: table or json")(
      "help,h", po::bool_switch(&flags.help), "show this help");
}

void add_run_options(po::options_description& desc, RunFlags& flags) {
  desc.add_options()("seq", po::value<std::string>(), "sequence length in tokens (8192, or 8k = 8 x 1024)")(
      "global-batch", po::value<std::int64_t>(), "sequences per optimizer step")(
      "micro-batch", po::value<std::int64_t>(), "sequences per micro-batch (default: free)")(
      "grad-bytes", po::value<std::int64_t>(), "bytes per accumulated gradient element: 2 or 4")(
      "precision", po::value<std::string>(),
      "precision preset: megatron_bf16, deepspeed_fp16, fsdp2_bf16, fp32, bf16_moments "
      "(default: the framework's)")("optimizer", po::value(&flags.optimizer)->default_value("adamw"),
                                    "adamw, sgd_momentum, muon or adafactor")(
      "no-flash-attention", po::bool_switch(&flags.no_flash_attention), "attention materialises its s x s scores")(
      "fit-margin", po::value<std::string>(),
      "what 'fits' means: p50..p99 = that percentile of the likely peak (the estimate times the measured/"
      "estimate ratio of validation runs of its family, at least the estimate) within the budget, e.g. p90; "
      "none (default): the estimate itself")("framework", po::value(&flags.framework)->default_value("megatron"),
                                             "whose defaults apply: megatron, torchtitan or deepspeed")(
      "rules", po::value(&flags.rules)->default_value("default"),
      "memory-model rules: default, sapp-nd (the seed-compatible profile), or sapp-nd:-NAME,... with those of "
      "SAPP-ND's conventions off (resident_comm, expert_tp_literal, seed_attention, table_shard, "
      "last_node_overhead, no_clip_case, seed_output, no_step_phase)")(
      "recompute-switches", po::value<std::string>(),
      "what selective recompute keeps: megatron_core_attn (default), hyperparallel, torchtitan_op, "
      "mindformers or mindformers_select_comm")("run-options", po::value<std::string>(),
                                                "YAML file of run options (memory-model spec §2.4 and §5.1 names: "
                                                "layers_per_vstage, fp8_saved_matmul_inputs, ...)");
}

void add_cluster_options(po::options_description& desc, ClusterFlags& flags) {
  desc.add_options()("model", po::value(&flags.model),
                     "model preset, config.json, model YAML or a directory with a config.json")(
      "device", po::value(&flags.device), "device preset or device YAML")(
      "devices", po::value(&flags.devices),
      "number of devices (search: also a list 8,16,64, a range 8..1024 of doublings or 64..512:64 of steps)")(
      "headroom", po::value(&flags.headroom)->default_value("0"),
      "memory kept free: a percentage of the capacity (10%) or a size (5 = 5GiB; also MiB, GB, MB)");
}

void add_sapp_nd_option(po::options_description& desc, ClusterFlags& flags) {
  desc.add_options()("sapp-nd-config", po::value(&flags.sapp_nd_config),
                     "SAPP-ND's MindFormers or HyperParallel YAML: model, devices, sequence, batch, precision and "
                     "(estimate, explain, export) the strategy and its per-stage layout from the file; implies "
                     "--rules sapp-nd unless --rules is given");
}

std::vector<std::int64_t> device_counts(const ClusterFlags& flags) {
  const std::string& t = flags.devices;
  auto fail = [&]() -> std::vector<std::int64_t> {
    throw InputError("command line", "--devices",
                     "expected a positive count up to " + std::to_string(kMaxDevices) +
                         ", a list like 8,16,64, a range of doublings like 8..1024 or of steps like 64..512:64, got " +
                         quoted_text(t));
  };
  std::vector<std::int64_t> out;
  if (const auto dots = t.find(".."); dots != std::string::npos) {
    const auto colon = t.find(':', dots);
    const auto lo = parse_integer(t.substr(0, dots));
    const auto hi =
        parse_integer(t.substr(dots + 2, colon == std::string::npos ? std::string::npos : colon - dots - 2));
    std::int64_t step = 0;  // 0: doublings
    if (colon != std::string::npos) {
      const auto given = parse_integer(t.substr(colon + 1));
      if (!given || *given < 1) return fail();
      step = *given;
    }
    if (!lo || !hi || *lo < 1 || *hi < *lo || *hi > kMaxDevices) return fail();
    for (std::int64_t n = *lo; n <= *hi; n = step > 0 ? n + step : 2 * n) out.push_back(n);
    // A range names its upper bound: it is searched even where the doublings or steps pass it.
    if (out.back() != *hi) out.push_back(*hi);
    return out;
  }
  std::stringstream in(t);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto v = parse_integer(item);
    if (!v || *v < 1 || *v > kMaxDevices) return fail();
    out.push_back(*v);
  }
  if (out.empty()) return fail();
  return out;
}

std::int64_t single_device_count(const ClusterFlags& flags) {
  const auto v = parse_integer(flags.devices);
  if (!v || *v < 1)
    throw InputError("command line", "--devices", "expected a positive integer, got " + quoted_text(flags.devices));
  return *v;
}

double parse_headroom(const std::string& text, double capacity, const InputOrigin& origin) {
  std::string t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  // A size: GiB by default, or with its unit (binary GiB/MiB, decimal GB/MB), a space allowed.
  double unit = 1024.0 * 1024.0 * 1024.0;
  for (const auto& [suffix, bytes] : std::initializer_list<std::pair<const char*, double>>{
           {"GiB", 1024.0 * 1024.0 * 1024.0}, {"MiB", 1024.0 * 1024.0}, {"GB", 1e9}, {"MB", 1e6}}) {
    if (!percent && t.ends_with(suffix)) {
      t.erase(t.size() - std::string_view(suffix).size());
      while (!t.empty() && t.back() == ' ') t.pop_back();
      unit = bytes;
      break;
    }
  }
  const auto v = parse_number(t);
  if (!v || *v < 0 || (percent && *v >= 100)) {
    throw InputError(origin.source, origin.field("--headroom"),
                     "expected a percentage below 100% (10%) or a size >= 0 (5 or 5GiB; also MiB, GB, MB), got " +
                         quoted_text(text));
  }
  const double bytes = percent ? capacity * *v / 100 : *v * unit;
  if (!percent && bytes >= capacity) {  // no budget left: nothing could ever fit
    std::ostringstream cap;
    cap << std::fixed << std::setprecision(2) << capacity / (1024.0 * 1024.0 * 1024.0);
    throw InputError(origin.source, origin.field("--headroom"),
                     "expected less than the device's " + cap.str() + " GiB capacity, got " + quoted_text(text));
  }
  return bytes;
}

void check_flag_range(const std::string& flag, double value, double lo, double hi) {
  if (value >= lo && value <= hi) return;  // false for NaN
  std::ostringstream msg;
  msg << "expected a number from " << lo << " to " << hi << ", got " << value;
  throw InputError("command line", flag, msg.str());
}

bool verify_requested_by_environment() {
  const char* v = std::getenv("MESHFIT_VERIFY");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

std::int64_t parse_sequence_length(const std::string& text) {
  std::string t = text;
  std::int64_t scale = 1;
  if (!t.empty() && (t.back() == 'k' || t.back() == 'K')) {  // 8k: 8·1024, as sequence lengths are named
    scale = 1024;
    t.pop_back();
  }
  const auto v = parse_integer(t);
  if (!v || *v < 1 || *v > (std::int64_t{1} << 40) / scale) {
    throw InputError("command line", "--seq",
                     "expected a positive number of tokens (8192, or 8k for 8 x 1024), got " + quoted_text(text));
  }
  return *v * scale;
}

void collect_run_flags(const po::variables_map& vm, RunFlags& flags) {
  auto take = [&](const char* name, std::optional<std::int64_t>& out) {
    if (vm.count(name)) out = vm[name].as<std::int64_t>();
  };
  if (vm.count("seq")) flags.seq = parse_sequence_length(vm["seq"].as<std::string>());
  take("global-batch", flags.global_batch);
  take("micro-batch", flags.micro_batch);
  take("grad-bytes", flags.grad_bytes);
  if (vm.count("precision")) flags.precision = vm["precision"].as<std::string>();
  if (vm.count("recompute-switches")) flags.recompute_switches = vm["recompute-switches"].as<std::string>();
  if (vm.count("run-options")) flags.run_options_file = vm["run-options"].as<std::string>();
  if (vm.count("fit-margin")) flags.fit_margin = vm["fit-margin"].as<std::string>();
}

po::variables_map parse_options(const std::string& command, const std::vector<std::string>& args,
                                const po::options_description& desc,
                                const po::positional_options_description* positional) {
  po::variables_map vm;
  try {
    po::command_line_parser parser(args);
    parser.options(desc).style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing);
    if (positional) {
      parser.positional(*positional);
    } else {
      po::positional_options_description none;
      parser.positional(none);
    }
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    std::string name = e.get_option_name();
    while (!name.empty() && name.front() == '-') name.erase(0, 1);
    std::vector<std::string> known;
    for (const auto& o : desc.options()) known.push_back(o->long_name());
    const std::vector<std::string> close = close_names(name, known);
    std::string hint;
    for (std::size_t i = 0; i < close.size() && i < 3; ++i) hint += (i ? ", --" : " (did you mean --") + close[i];
    if (!hint.empty()) hint += "?)";
    throw UsageError("meshfit " + command + ": " + e.what() + hint + "\nTry 'meshfit " + command + " --help'.");
  } catch (const po::error& e) {
    throw UsageError("meshfit " + command + ": " + e.what() + "\nTry 'meshfit " + command + " --help'.");
  }
  return vm;
}

std::optional<po::variables_map> parse_or_help(const std::string& command, const std::vector<std::string>& args,
                                               const po::options_description& desc, const CommonFlags& common,
                                               std::ostream& out,
                                               const po::positional_options_description* positional) {
  po::variables_map vm = parse_options(command, args, desc, positional);
  if (common.help) {
    out << desc << '\n';
    return std::nullopt;
  }
  return vm;
}

OutputFormat parse_format(const std::string& value, const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw UsageError("--format: expected one of " + list + ", got " + quoted_text(value));
  }
  if (value == "json") return OutputFormat::json;
  if (value == "csv") return OutputFormat::csv;
  return OutputFormat::table;
}

}  // namespace meshfit
