// The CUDA backend: replays a program of an executable on an NVIDIA GPU.
// One device arena of executable.arena_bytes (cudaMalloc, capped by
// execution.device_memory_limit), remote buffers in pinned host memory,
// kernels on a compute stream (runtime/cuda/CudaKernels), host->device and
// device->host copies on a stream each, ordered by events exactly as the
// executable's load/store/wait instructions say (and by host bytes where a
// load and a store overlap), NVTX ranges around each phase.
#pragma once

#include "runtime/backend/Backend.h"
#include "runtime/backend/Registry.h"

#include <memory>
#include <optional>

namespace ferry {

// Throws RuntimeError naming the CUDA runtime's reason when no device is
// usable (no driver, no GPU), or when the arena does not fit the budget or
// the device.
// `group`: the replica group (null: this process alone); its collectives
// run through NCCL (NcclGroup.h).
std::unique_ptr<Backend> createCudaBackend(const fxe::Executable &executable,
                                           std::optional<uint64_t> limitBytes,
                                           comm::Communicator *group);

// The registry's entry: "cuda", createCudaBackend, the visible devices. The
// module (Module.cpp) hands it to the registry; builds that link the backend
// in register it directly (backend/Builtin.cpp).
const BackendInfo &cudaBackendInfo();

} // namespace ferry
