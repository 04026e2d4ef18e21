// Device input: a bundled preset (data/devices) or a device YAML that may start from a preset
// (`preset: h100-80gb`) and override any field (docs/spec/devices.md).
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "engine/input_error.hpp"

#include "estimators/device.hpp"

namespace meshfit {

Device device_from_yaml(const YAML::Node& doc, const std::string& source);
// A preset name (case-insensitive) or a path to a device YAML.
Device load_device(const std::string& spec, const InputOrigin& origin = {});
// A cluster: the device and a device count (>= 1).
// The most devices a cluster may have: far beyond the largest clusters (~10^5 devices), and low
// enough that a search's divisor enumeration stays within seconds (16,777,216 devices: 0.1 s;
// the most composite counts below it: under 2 s).
inline constexpr std::int64_t kMaxDevices = std::int64_t{1} << 24;
Cluster make_cluster(const std::string& device_spec, std::int64_t devices, const InputOrigin& origin = {});

}  // namespace meshfit
