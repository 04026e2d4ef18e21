// The device preset a validation case's `device.name` means (docs/spec/devices.md §4). Sources
// spell one GPU many ways: "H100-80GB", "NVIDIA H100 80GB HBM3", "H100 SXM5", "DGX-GB300",
// "AMD Instinct MI355X", "MI300X-192GB". The name is read as a GPU model and, where the model comes
// in more than one memory size, the size: vendor, product-line and form-factor words are dropped,
// so any of those spellings finds its preset, and a size the model was never sold in finds none.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace meshfit {

// The preset (a data/devices name) for a case's device name, or none: an unknown model, a size the
// model does not come in, or a PCIe card (a lower clock and power than the SXM part the presets
// describe).
std::optional<std::string> case_device_preset(std::string_view name);

// The names the README lists, for an error message.
std::string case_device_examples();

}  // namespace meshfit
