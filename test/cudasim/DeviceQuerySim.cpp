// ferry's CUDA device query, compiled unchanged by the host C++ compiler
// against the simulator's headers (test-only).
#include "runtime/cuda/DeviceQuery.cu"
