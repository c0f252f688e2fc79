// The backends this build has: the one file that names them (as IREE's
// driver registration does). Compiled once per runtime flavour:
// - ferry: the CPU backend linked in, the CUDA backend as the module
//   libferry-backend-cuda.so (FERRY_CUDA_BACKEND_MODULE), opened on first use;
// - the GPU tests and the CUDA simulator: the CUDA backend linked in
//   (FERRY_CUDA_BACKEND_LINKED).
#include "runtime/backend/Registry.h"

#include "runtime/cpu/CpuBackend.h"
#ifdef FERRY_CUDA_BACKEND_LINKED
#include "runtime/cuda/CudaBackend.h"
#endif

#include <thread>

namespace {

ferry::DeviceList cpuDevices() {
  unsigned threads = std::thread::hardware_concurrency();
  return {{"this host (" + std::to_string(threads) + " hardware threads)"}, ""};
}

} // namespace

void ferry::registerBuiltinBackends() {
  registerBackend({"cpu",
                   [](const fxe::Executable &exe, std::optional<uint64_t> limit,
                      comm::Communicator *group) -> std::unique_ptr<Backend> {
                     return std::make_unique<CpuBackend>(exe, limit, group);
                   },
                   cpuDevices});
#if defined(FERRY_CUDA_BACKEND_LINKED)
  registerBackend(cudaBackendInfo());
#elif defined(FERRY_CUDA_BACKEND_MODULE)
  registerBackendModule("cuda", "libferry-backend-cuda.so");
#endif
}
