// A kernel with 49 KiB of static shared memory, one KiB past the 48 KiB a
// block may declare statically: ptxas must refuse it (the simulator leaves
// this limit to the real compiler; test/cudasim/CMakeLists.txt).
__global__ void tooMuchShared(float *out) {
  __shared__ float tile[49 * 256];
  tile[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % (49 * 256)];
}
