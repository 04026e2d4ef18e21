// `meshfit devices`: the bundled device presets.
#include "engine/cli_options.hpp"
#include "engine/commands.hpp"
#include "engine/device_config.hpp"
#include "engine/json_writer.hpp"
#include "engine/presets.hpp"
#include "engine/text_format.hpp"

namespace meshfit {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}

int command_devices(const std::vector<std::string>& args, std::ostream& out, std::ostream& /*err*/) {
  CommonFlags common;
  po::options_description desc(
      "Usage: meshfit devices [--format table|json]\n\nLists the bundled device presets.\nOptions");
  add_common_options(desc, common);
  if (!parse_or_help("devices", args, desc, common, out)) return 0;
  const OutputFormat format = parse_format(common.format, {"table", "json"});

  std::vector<Device> devices;
  for (const auto& name : preset_names("devices")) devices.push_back(load_device(name));

  if (format == OutputFormat::json) {
    JsonWriter j(out);
    j.begin_object().key("devices").begin_array();
    for (const auto& d : devices) {
      j.begin_object()
          .field("name", d.name)
          .field("capacity_bytes", d.capacity)
          .field("capacity_gib", d.capacity / kGiB)
          .field("peak_flops", d.peak_flops)
          .field("hbm_bandwidth", d.hbm_bandwidth)
          .field("devices_per_node", d.devices_per_node)
          .field("intra_bandwidth", d.intra_bandwidth)
          .field("inter_bandwidth", d.inter_bandwidth)
          .field("fragmentation", d.fragmentation)
          .field("overhead_context", d.overhead_context)
          .field("overhead_per_communicator", d.overhead_per_communicator)
          .field("overhead_workspaces", d.overhead_workspaces)
          .field("overhead_ep_library", d.overhead_ep_library)
          .field("overhead_fixed", d.overhead_fixed)
          .end_object();
    }
    j.end_array().end_object();
    out << '\n';
    return 0;
  }
  TextTable t;
  t.row({"name", "capacity GiB", "bf16 TFLOP/s", "HBM GB/s", "per node", "intra GB/s", "inter GB/s"});
  for (const auto& d : devices) {
    t.row({d.name, fixed(d.capacity / kGiB, 2), fixed(d.peak_flops / 1e12, 1), fixed(d.hbm_bandwidth / 1e9, 0),
           std::to_string(d.devices_per_node), fixed(d.intra_bandwidth / 1e9, 0), fixed(d.inter_bandwidth / 1e9, 0)});
  }
  t.print(out);
  return 0;
}

}  // namespace meshfit
