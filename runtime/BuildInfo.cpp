// The build's identity and features; see BuildInfo.h.
#include "runtime/BuildInfo.h"

#include "ferry/Version.h"

#include <fmt/format.h>

#include "runtime/backend/Registry.h"
#ifdef FERRY_HAVE_MPI
#include <mpi.h>
#endif

namespace ferry {

BuildInfo buildInfo() {
  BuildInfo info;
  info.version = FERRY_VERSION;
  info.gitHash = FERRY_GIT_HASH;
#ifdef FERRY_HAVE_COMPILER
  info.compiler = true;
#endif
#ifdef FERRY_HAVE_MPI
  info.mpi = true;
  // Callable before MPI_Init.
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (MPI_Get_library_version(text, &length) == MPI_SUCCESS) {
    std::string line(text, static_cast<size_t>(length));
    info.mpiLibrary = line.substr(0, line.find_first_of(",\n"));
  }
#endif
  return info;
}

std::string describeBuild() {
  BuildInfo info = buildInfo();
  std::string out = fmt::format("ferry {} ({})\n", info.version, info.gitHash);
  out += fmt::format(
      "  compiler:     {}\n",
      info.compiler ? "yes (MLIR; module libferry-compiler.so, opened on a "
                      "cache miss)"
                    : "no (runtime-only build)");
  out += fmt::format("  cpu backend:  yes\n");
  std::string cuda = "no";
  for (const auto &[name, how] : availableBackends())
    if (name == "cuda")
      cuda = "yes (" + how + "; `ferry devices` lists the GPUs)";
  out += fmt::format("  cuda backend: {}\n", cuda);
  out += fmt::format("  mpi:          {}\n",
                     info.mpi ? "yes (" + info.mpiLibrary + ")" : "no");
  return out;
}

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
