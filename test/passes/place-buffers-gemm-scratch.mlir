// RUN: ferry-opt %s --ferry-place-buffers | FileCheck %s --check-prefix=NONE
// RUN: ferry-opt %s --ferry-place-buffers=device-budget=4194304 | FileCheck %s --check-prefix=SMALL
// RUN: ferry-opt %s --ferry-place-buffers=device-budget=17179869184 | FileCheck %s --check-prefix=LARGE

// Tests that ferry-place-buffers owns the GEMM scratch under a budget, in a
// module without phases too: a workspace's cuBLASLt scratch (32 MiB, what
// ferry-select-kernels was given on cuda) is cut to a 32nd of the budget
// when that is smaller: 4 MiB / 32 = 128 KiB, so the workspace of 96 bytes
// of rounded inputs + 32 MiB becomes 96 + 131072 bytes, and every call
// using it sees the new size. Without a budget or with a large one it is
// unchanged, and nothing else is recorded.

// NONE: rt.buffer 3 size 33554528 {label = "bf16 matmul workspace", scratch = 33554432 : i64}
// NONE: array<i64: 3, 33554528, 0>
// NONE-NOT: rt.prefetch

// SMALL: rt.buffer 3 size 131168 {label = "bf16 matmul workspace", scratch = 131072 : i64}
// SMALL: rt.call "gemm" buffers [array<i64: 0, 32, 0>, array<i64: 1, 64, 0>, array<i64: 2, 32, 0>, array<i64: 3, 131168, 0>]
// SMALL-NOT: rt.prefetch

// LARGE: rt.buffer 3 size 33554528 {label = "bf16 matmul workspace", scratch = 33554432 : i64}

module {
  rt.state @x : tensor<2x4xf32> role "input" at 0 size 32 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @w : tensor<4x4xf32> role "parameter" at 64 size 64 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.state @y : tensor<2x4xf32> role "state" at 128 size 32 {hf = "y", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 0 transient 0 {
    rt.buffer 3 size 33554528 {label = "bf16 matmul workspace", scratch = 33554432 : i64}
    rt.call "gemm" buffers [array<i64: 0, 32, 0>, array<i64: 1, 64, 0>, array<i64: 2, 32, 0>, array<i64: 3, 33554528, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 4>, array<i64: 4>, array<i64: 0>, array<i64: 1>, array<i64: 8>, array<i64: 16>, array<i64: 8>, array<i64: 0>, array<i64: 1>] floats [1.0]
  }
}
