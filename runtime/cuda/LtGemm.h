// GEMMs through cuBLASLt, with the epilogues ferry-fuse-epilogues asks for
// (bias along n, the bias gradient of a transposed A) and a workspace the
// compiler planned. Row-major, the layout of every ferry buffer: the call is
// made as the column-major C^T = op(B)^T op(A)^T. Descriptors and the
// heuristic's algorithm are made once per distinct call and cached, so a
// replayed program pays a map lookup per GEMM.
//
// run() returns false when cuBLASLt has no algorithm for a call (an
// epilogue it does not support for these types or transposes): the caller
// then runs the plain GEMM and the epilogue as separate kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

typedef struct CUstream_st *cudaStream_t;
typedef struct cublasLtContext *cublasLtHandle_t;

namespace ferry::cuda {

struct GemmCall {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  float alpha = 1.0f, beta = 0.0f;
  const void *a = nullptr, *b = nullptr; // of `inputType`
  int64_t strideA = 0, strideB = 0;
  float *c = nullptr; // bf16 words when bf16Out
  int64_t strideC = 0;
  bool bf16Out = false; // c (and d) bf16: only without an epilogue, whose
                        // vector would have to be bf16 too
  int inputType = 0; // 0 fp32, 1 bf16, 2 fp16
  int epilogue = 0; // 0 none, 1 bias (vector [n]), 2 bias gradient (vector [m])
  float *vector = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

class LtGemm {
public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm &) = delete;
  LtGemm &operator=(const LtGemm &) = delete;

  bool run(const GemmCall &call, cudaStream_t stream);

private:
  struct Plan;
  // Shapes, transposes, strides, types, epilogue, beta != 0, workspace
  // bytes, the matrices' alignment and the bias vector's: what the
  // algorithm choice depends on (an algorithm may assume each).
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int64_t,
                         int64_t, int64_t, int, int, size_t, int, int>;
  cublasLtHandle_t handle_ = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

} // namespace ferry::cuda
