// ferry's CUDA kernels, compiled unchanged by the host C++ compiler against
// the simulator's headers (test-only).
#include "runtime/cuda/CudaKernels.cu"
