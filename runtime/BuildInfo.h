// What this build of ferry is and can do: version, git hash, and which parts
// were built in (compiler, MPI; the backends come from the registry).
// `ferry --version` prints it.
#pragma once

#include <string>

namespace ferry {

struct BuildInfo {
  std::string version;
  std::string gitHash;
  bool compiler = false;
  bool mpi = false;
  std::string mpiLibrary; // the MPI library's own version line, when built in
};

BuildInfo buildInfo();

// Several lines for `ferry --version`. Opens no backend module, so it maps
// no CUDA library.
std::string describeBuild();

// `ferry devices`: each backend's devices (or why it has none), opening the
// backend modules.
std::string describeDevices();

} // namespace ferry
