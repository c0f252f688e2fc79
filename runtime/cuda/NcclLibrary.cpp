// NCCL opened on first use (NcclLibrary.h).
#include "runtime/cuda/NcclLibrary.h"

#include "runtime/Error.h"

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#include <dlfcn.h>

namespace ferry::cuda {
namespace {

template <typename F>
void bind(void *library, const char *symbol, F &slot,
          const std::string &where) {
  slot = reinterpret_cast<F>(dlsym(library, symbol));
  if (!slot)
    throw RuntimeError(fmt::format(
        "{} has no {}: it is not NCCL, or a version older than 2.9; point "
        "FERRY_NCCL_LIBRARY at NCCL 2.9 or later",
        where, symbol));
}

NcclLibrary open(const std::string &where) {
  void *library = dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    throw RuntimeError(fmt::format(
        "a replicated run on the CUDA backend needs NCCL, and {} could not be "
        "loaded ({}). Install NCCL 2.9 or later (the CUDA toolkit's "
        "libnccl, or pip's nvidia-nccl-cu13) and put its lib directory on "
        "LD_LIBRARY_PATH, or set FERRY_NCCL_LIBRARY to the library's path",
        where, reason ? reason : "no reason given"));
  }
  NcclLibrary n;
  n.where = where;
  bind(library, "ncclGetVersion", n.getVersion, where);
  bind(library, "ncclGetErrorString", n.getErrorString, where);
  bind(library, "ncclGetUniqueId", n.getUniqueId, where);
  bind(library, "ncclCommInitRank", n.commInitRank, where);
  bind(library, "ncclCommDestroy", n.commDestroy, where);
  bind(library, "ncclCommAbort", n.commAbort, where);
  bind(library, "ncclCommGetAsyncError", n.commGetAsyncError, where);
  bind(library, "ncclAllReduce", n.allReduce, where);
  bind(library, "ncclReduceScatter", n.reduceScatter, where);
  bind(library, "ncclAllGather", n.allGather, where);
  return n; // the library stays open for the process
}

void checkVersion(NcclLibrary &n) {
  if (n.getVersion(&n.version) != ncclSuccess)
    throw RuntimeError(
        fmt::format("NCCL at {} does not report its version", n.where));
  if (n.version < kOldestNccl)
    throw RuntimeError(fmt::format(
        "NCCL {} at {} is older than 2.9, which ferry's replicated runs need "
        "(collectives captured into CUDA graphs); install a newer NCCL or set "
        "FERRY_NCCL_LIBRARY to one",
        ncclVersionString(n.version), n.where));
}

NcclLibrary load() {
  const char *override = std::getenv("FERRY_NCCL_LIBRARY");
  NcclLibrary n;
#ifdef FERRY_CUDA_SIM
  if (!override || !*override) {
    n.getVersion = ncclGetVersion;
    n.getErrorString = ncclGetErrorString;
    n.getUniqueId = ncclGetUniqueId;
    n.commInitRank = ncclCommInitRank;
    n.commDestroy = ncclCommDestroy;
    n.commAbort = ncclCommAbort;
    n.commGetAsyncError = ncclCommGetAsyncError;
    n.allReduce = ncclAllReduce;
    n.reduceScatter = ncclReduceScatter;
    n.allGather = ncclAllGather;
  } else
#endif
    n = open(override && *override ? override : "libnccl.so.2");
  checkVersion(n);
  return n;
}

} // namespace

NcclLibrary openNcclLibrary(const std::string &where) {
  NcclLibrary n = open(where);
  checkVersion(n);
  return n;
}

std::string ncclVersionString(int code) {
  if (code >= 10000) // 2.9 and later: major * 10000 + minor * 100 + patch
    return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code / 100 % 10, code % 100);
}

const NcclLibrary &ncclLibrary() {
  // Loaded once; a failure is thrown again on every call (never cached
  // half-made).
  static std::mutex mutex;
  static std::unique_ptr<NcclLibrary> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded)
    loaded = std::make_unique<NcclLibrary>(load());
  return *loaded;
}

} // namespace ferry::cuda
