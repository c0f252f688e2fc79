// The build's identity and features; see BuildInfo.h.
#include "runtime/BuildInfo.h"

#include "ferry/Version.h"

#include <fmt/format.h>

#include <string>
#ifdef FERRY_HAVE_MPI
// Only the version macros are used: no C++ bindings, whose static objects
// would make every program that prints its version map the MPI library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
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
  // From the headers the build used: asking the library would map it, and
  // `--version` maps nothing it does not print.
#ifdef OMPI_MAJOR_VERSION
  info.mpiLibrary = "Open MPI v" + std::to_string(OMPI_MAJOR_VERSION) + "." +
                    std::to_string(OMPI_MINOR_VERSION) + "." +
                    std::to_string(OMPI_RELEASE_VERSION);
#else
  info.mpiLibrary = "MPI " + std::to_string(MPI_VERSION) + "." +
                    std::to_string(MPI_SUBVERSION);
#endif
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
  // Without asking the registry, which would link every backend in.
#ifdef FERRY_HAVE_CUDA
  std::string cuda =
      "yes (module libferry-backend-cuda.so; `ferry devices` lists the GPUs)";
#else
  std::string cuda = "no";
#endif
  out += fmt::format("  cuda backend: {}\n", cuda);
  out += fmt::format("  mpi:          {}\n",
                     info.mpi ? "yes (" + info.mpiLibrary + ")" : "no");
  return out;
}

} // namespace ferry
