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

// NONE: %[[W:.*]] = rt.alloc size 33554528 {label = "bf16 matmul workspace", scratch = 33554432 : i64}
// NONE: %[[S:.*]] = rt.slice %[[W]] [0] size 33554528
// NONE-NEXT: rt.gemm {{.*}} workspace(%[[S]])
// NONE-NOT: rt.prefetch

// SMALL: %[[W:.*]] = rt.alloc size 131168 {label = "bf16 matmul workspace", scratch = 131072 : i64}
// SMALL: %[[A:.*]] = rt.slice %x [0] size 32
// SMALL-NEXT: %[[B:.*]] = rt.slice %w [0] size 64
// SMALL-NEXT: %[[C:.*]] = rt.slice %y [0] size 32
// SMALL-NEXT: %[[S:.*]] = rt.slice %[[W]] [0] size 131168
// SMALL-NEXT: rt.gemm a(%[[A]]) b(%[[B]]) c(%[[C]]) workspace(%[[S]])
// SMALL-NOT: rt.prefetch

// LARGE: rt.alloc size 33554528 {label = "bf16 matmul workspace", scratch = 33554432 : i64}

module {
  rt.state @x : tensor<2x4xf32> role "input" at 0 size 32 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @w : tensor<4x4xf32> role "parameter" at 64 size 64 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.state @y : tensor<2x4xf32> role "state" at 128 size 32 {hf = "y", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 0 transient 0 {
    %x = rt.state_ref @x
    %w = rt.state_ref @w
    %y = rt.state_ref @y
    %b3 = rt.alloc size 33554528 {label = "bf16 matmul workspace", scratch = 33554432 : i64}
    %r0 = rt.slice %x [0] size 32
    %r1 = rt.slice %w [0] size 64
    %r2 = rt.slice %y [0] size 32
    %r3 = rt.slice %b3 [0] size 33554528
    rt.gemm a(%r0) b(%r1) c(%r2) workspace(%r3) {batch = array<i64: 1>, m = array<i64: 2>, n = array<i64: 4>, k = array<i64: 4>, trans_a = array<i64: 0>, trans_b = array<i64: 1>, stride_a = array<i64: 8>, stride_b = array<i64: 16>, stride_c = array<i64: 8>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
  }
}
