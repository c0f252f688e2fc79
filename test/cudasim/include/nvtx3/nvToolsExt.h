// ferry's CUDA simulator: NVTX ranges are markers for a profiler; the
// simulator checks that pushes and pops pair up and otherwise ignores them.
#pragma once
int nvtxRangePushA(const char *message);
int nvtxRangePop();
