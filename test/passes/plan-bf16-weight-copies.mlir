// RUN: ferry-opt %s --split-input-file --ferry-plan-bf16-weight-copies | FileCheck %s

// Tests ferry-plan-bf16-weight-copies alone, on calls over virtual buffers
// (states @x, @w, @ws, @u are buffers 0-3, the temporaries 4 and 5; @w, @ws and @u are parameters,
// @ws stacked: two 8x8 layers of 256 bytes):
// * @w, read by a bf16 GEMM in the micro-batch loop r0, is copied once
//   before that loop (buffer 6: 128 bytes, a scale by 1 writing bf16);
// * @ws, read per layer (offset 256 * r1 forward, 256 - 256 * r2 backward),
//   is copied whole (512 -> 256 bytes) before r0, and both layer loops read
//   their layer's half of the one copy (offsets 128 * r1, 128 - 128 * r2);
// * @u is written (fill) in the loop that reads it: its copy is made
//   inside, before the GEMM;
// * @w again after a fill of @w at the top level: a new copy, not the first;
// * an fp32 GEMM (precision 0) and the input @x stay as they are.

// CHECK-LABEL: rt.program @f
// CHECK-DAG: rt.buffer 6 size 128 {bf16, label = "bf16 copy of @w"}
// CHECK-DAG: rt.buffer 7 size 256 {bf16, label = "bf16 copy of @ws"}
// CHECK-DAG: rt.buffer 8 size 128 {bf16, label = "bf16 copy of @u"}
// CHECK-DAG: rt.buffer 9 size 128 {bf16, label = "bf16 copy of @w"}
// CHECK: rt.call "scale" buffers [array<i64: 1, 256, 0>, array<i64: 6, 128, 0>] ints [array<i64: 64>] floats [1.000000e+00] {bf16 = 2 : i64}
// CHECK-NEXT: rt.call "scale" buffers [array<i64: 2, 512, 0>, array<i64: 7, 256, 0>] ints [array<i64: 128>] floats [1.000000e+00] {bf16 = 2 : i64}
// CHECK-NEXT: rt.loop r 0 count 2 {
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 6, 128, 0>, array<i64: 4, 64, 0>] {{.*}} {bf16 = 2 : i64}
// CHECK-NEXT: rt.loop r 1 count 2 {
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 4, 64, 0>, array<i64: 7, 128, 0, 0, 128>, array<i64: 5, 64, 0>] {{.*}} {bf16 = 2 : i64}
// CHECK-NEXT: }
// CHECK-NEXT: rt.loop r 2 count 2 {
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 5, 64, 0>, array<i64: 7, 128, 128, 0, 0, -128>, array<i64: 4, 64, 0>] {{.*}} {bf16 = 2 : i64}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: rt.loop r 0 count 2 {
// CHECK-NEXT: rt.call "scale" buffers [array<i64: 3, 256, 0>, array<i64: 8, 128, 0>] ints [array<i64: 64>] floats [1.000000e+00] {bf16 = 2 : i64}
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 8, 128, 0>, array<i64: 4, 64, 0>] {{.*}} {bf16 = 2 : i64}
// CHECK-NEXT: rt.call "fill" buffers [array<i64: 3, 256, 0>]
// CHECK-NEXT: }
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 1, 256, 0>, array<i64: 4, 64, 0>] {{.*}} floats [1.000000e+00]{{$}}
// CHECK-NEXT: rt.call "fill" buffers [array<i64: 1, 256, 0>]
// CHECK-NEXT: rt.call "scale" buffers [array<i64: 1, 256, 0>, array<i64: 9, 128, 0>]
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 9, 128, 0>, array<i64: 4, 64, 0>] {{.*}} {bf16 = 2 : i64}

module {
  rt.state @x : tensor<2x8xf32> role "input" at 0 size 64 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @w : tensor<8x8xf32> role "parameter" at 0 size 256 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.state @ws : tensor<2x8x8xf32> role "parameter" at 0 size 512 {hf = "ws", init = "zeros", init_std = 0.0 : f64}
  rt.state @u : tensor<8x8xf32> role "parameter" at 0 size 256 {hf = "u", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 3 transient 0 {
    rt.buffer 4 size 64
    rt.buffer 5 size 64
    rt.loop r 0 count 2 {
      rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 1, 256, 0>, array<i64: 4, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 0>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 1>] floats [1.0]
      rt.loop r 1 count 2 {
        rt.call "gemm" buffers [array<i64: 4, 64, 0>, array<i64: 2, 256, 0, 0, 256>, array<i64: 5, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 0>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 1>] floats [1.0]
      }
      rt.loop r 2 count 2 {
        rt.call "gemm" buffers [array<i64: 5, 64, 0>, array<i64: 2, 256, 256, 0, 0, -256>, array<i64: 4, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 1>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 1>] floats [1.0]
      }
    }
    rt.loop r 0 count 2 {
      rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 3, 256, 0>, array<i64: 4, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 0>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 1>] floats [1.0]
      rt.call "fill" buffers [array<i64: 3, 256, 0>] ints [array<i64: 64>] floats [0.0]
    }
    rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 1, 256, 0>, array<i64: 4, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 0>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 0>] floats [1.0]
    rt.call "fill" buffers [array<i64: 1, 256, 0>] ints [array<i64: 64>] floats [0.0]
    rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 1, 256, 0>, array<i64: 4, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 0>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 1>] floats [1.0]
  }
}

// -----

// A phase inside the layer loop: the copy of the layer's weight is made in
// the phase (after phase_begin, out of the micro-batch loop r1 only), one
// layer at a time, so the weight stays a phase-only state that may live in
// host memory. A GEMM operand already stored as bf16 is left alone.

// CHECK-LABEL: rt.program @p
// CHECK: rt.buffer 5 size 128 {bf16, label = "bf16 copy of @ws"}
// CHECK: rt.loop r 0 count 2 {
// CHECK-NEXT: rt.call "phase_begin"
// CHECK-NEXT: rt.call "scale" buffers [array<i64: 1, 256, 0, 256>, array<i64: 5, 128, 0>] ints [array<i64: 64>] floats [1.000000e+00] {bf16 = 2 : i64}
// CHECK-NEXT: rt.loop r 1 count 2 {
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 5, 128, 0>, array<i64: 2, 64, 0>] {{.*}} {bf16 = 2 : i64}
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 4, 32, 0>, array<i64: 5, 128, 0>, array<i64: 2, 64, 0>] {{.*}} {bf16 = 3 : i64}
// CHECK-NEXT: }
// CHECK-NEXT: rt.call "phase_end"

module {
  rt.state @x : tensor<2x8xf32> role "input" at 0 size 64 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @ws : tensor<2x8x8xf32> role "parameter" at 0 size 512 {hf = "ws", init = "zeros", init_std = 0.0 : f64}
  rt.program @p inputs [] registers 2 transient 0 attributes {rt.phase_names = ["layer"]} {
    rt.buffer 2 size 64
    rt.buffer 4 size 32 {bf16}
    rt.loop r 0 count 2 {
      rt.call "phase_begin" buffers [] ints [array<i64: 0>] floats []
      rt.loop r 1 count 2 {
        rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 1, 256, 0, 256>, array<i64: 2, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 0>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 1>] floats [1.0]
        rt.call "gemm" buffers [array<i64: 4, 32, 0>, array<i64: 1, 256, 0, 256>, array<i64: 2, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 0>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 1>] floats [1.0] {bf16 = 1 : i64}
      }
      rt.call "phase_end" buffers [] ints [array<i64: 0>] floats []
    }
  }
}

// -----

// One block, two phases reading the same weight: each phase makes its own
// copy (a copy never lives across phases). A bias-gradient epilogue sums
// its unrounded a, so a parameter there stays fp32.

// CHECK-LABEL: rt.program @q
// CHECK: rt.buffer 4 size 128 {bf16, label = "bf16 copy of @w"}
// CHECK: rt.buffer 5 size 128 {bf16, label = "bf16 copy of @w"}
// CHECK: rt.call "phase_begin" buffers [] ints [array<i64: 0>]
// CHECK-NEXT: rt.call "scale" buffers [array<i64: 1, 256, 0>, array<i64: 4, 128, 0>]
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 4, 128, 0>, array<i64: 2, 64, 0>]
// CHECK-NEXT: rt.call "phase_end"
// CHECK-NEXT: rt.call "phase_begin" buffers [] ints [array<i64: 1>]
// CHECK-NEXT: rt.call "scale" buffers [array<i64: 1, 256, 0>, array<i64: 5, 128, 0>]
// CHECK-NEXT: rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 5, 128, 0>, array<i64: 2, 64, 0>]
// CHECK-NEXT: rt.call "gemm_epilogue" buffers [array<i64: 1, 256, 0>, array<i64: 0, 64, 0>, array<i64: 2, 64, 0>, array<i64: 3, 32, 0>] {{.*}} floats [1.000000e+00]{{$}}
// CHECK-NEXT: rt.call "phase_end"

module {
  rt.state @x : tensor<2x8xf32> role "input" at 0 size 64 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.state @w : tensor<8x8xf32> role "parameter" at 0 size 256 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.program @q inputs [] registers 0 transient 0 attributes {rt.phase_names = ["a", "b"]} {
    rt.buffer 2 size 64
    rt.buffer 3 size 32
    rt.call "phase_begin" buffers [] ints [array<i64: 0>] floats []
    rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 1, 256, 0>, array<i64: 2, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 0>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 1>] floats [1.0]
    rt.call "phase_end" buffers [] ints [array<i64: 0>] floats []
    rt.call "phase_begin" buffers [] ints [array<i64: 1>] floats []
    rt.call "gemm" buffers [array<i64: 0, 64, 0>, array<i64: 1, 256, 0>, array<i64: 2, 64, 0>] ints [array<i64: 1>, array<i64: 2>, array<i64: 8>, array<i64: 8>, array<i64: 0>, array<i64: 0>, array<i64: 16>, array<i64: 64>, array<i64: 16>, array<i64: 0>, array<i64: 1>] floats [1.0]
    rt.call "gemm_epilogue" buffers [array<i64: 1, 256, 0>, array<i64: 0, 64, 0>, array<i64: 2, 64, 0>, array<i64: 3, 32, 0>] ints [array<i64: 1>, array<i64: 8>, array<i64: 2>, array<i64: 8>, array<i64: 1>, array<i64: 1>, array<i64: 64>, array<i64: 16>, array<i64: 16>, array<i64: 0>, array<i64: 1>, array<i64: 2>] floats [1.0]
    rt.call "phase_end" buffers [] ints [array<i64: 1>] floats []
  }
}
