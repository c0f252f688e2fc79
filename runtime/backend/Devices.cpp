// `ferry devices`: each backend's devices, or why it has none. Apart from
// BuildInfo.cpp, because it needs the registry (and so every backend).
#include "runtime/BuildInfo.h"
#include "runtime/backend/Registry.h"

#include <fmt/format.h>

namespace ferry {

std::string describeDevices() {
  std::string out;
  for (const auto &[name, how] : availableBackends()) {
    DeviceList list = listDevices(name);
    if (list.devices.empty())
      out += fmt::format("{}: none ({})\n", name, list.reason);
    for (size_t i = 0; i < list.devices.size(); ++i)
      out += fmt::format("{} device {}: {}\n", name, i, list.devices[i]);
  }
  return out;
}

} // namespace ferry
