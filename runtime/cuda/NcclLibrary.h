// NCCL, opened on first use instead of linked: the CUDA backend module
// loads on a machine without NCCL (one GPU needs none), and a replicated run
// that cannot find it, or finds one too old, stops with a message that says
// what to install or set. Under the CUDA simulator the table holds the
// simulated NCCL's functions, unless FERRY_NCCL_LIBRARY names a file to
// open (which is how the tests reach the loading errors).
//
// Where it looks: FERRY_NCCL_LIBRARY (a path or a file name), else
// libnccl.so.2 through the dynamic loader's search (LD_LIBRARY_PATH, the
// module's RUNPATH, the system's directories). The GPU kit's run.sh puts
// the CUDA toolkit's lib64 and pip's nvidia/nccl/lib there.
#pragma once

#include <nccl.h>

#include <string>

namespace ferry::cuda {

struct NcclLibrary {
  std::string where; // the file opened ("" under the simulator)
  int version = 0;   // NCCL_VERSION_CODE of the library: 22809 is 2.28.9
  decltype(&ncclGetVersion) getVersion = nullptr;
  decltype(&ncclGetErrorString) getErrorString = nullptr;
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRank) commInitRank = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclCommAbort) commAbort = nullptr;
  decltype(&ncclCommGetAsyncError) commGetAsyncError = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclReduceScatter) reduceScatter = nullptr;
  decltype(&ncclAllGather) allGather = nullptr;
};

// The oldest NCCL ferry runs with: 2.9 captures collectives into CUDA graphs.
constexpr int kOldestNccl = 20900;

// Opens NCCL once (later calls return the same table). Throws RuntimeError
// naming the file it tried, the loader's reason and the fix.
const NcclLibrary &ncclLibrary();

// Opens the NCCL at `where` (a path or a file name for the loader's search)
// and checks its version, without caching: what ncclLibrary does on its
// first call, for the tests of its errors.
NcclLibrary openNcclLibrary(const std::string &where);

// "2.28.9" from 22809 (and the pre-2.9 encoding, 2708 = 2.7.8).
std::string ncclVersionString(int code);

} // namespace ferry::cuda
