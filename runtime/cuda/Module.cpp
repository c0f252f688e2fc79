// The entry point of libferry-backend-cuda.so, the CUDA backend as a module:
// the registry (runtime/backend/Registry.cpp) opens it the first time an
// executable for execution.backend cuda runs or `ferry devices` asks, so a
// process that never uses the GPU never maps the CUDA libraries.
#include "runtime/cuda/CudaBackend.h"

extern "C" __attribute__((visibility("default"))) const ferry::BackendInfo *
ferry_backend_module_info() {
  return &ferry::cudaBackendInfo();
}
