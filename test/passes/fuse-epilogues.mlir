// RUN: ferry-opt %s --split-input-file --ferry-fuse-epilogues | FileCheck %s
// RUN: ferry-opt %s --split-input-file "--ferry-fuse-epilogues=fold-operand-scales=false" | FileCheck %s --check-prefix=FP16

// ferry-fuse-epilogues folds the op next to a graph.matmul that the GEMM can
// compute into graph.fused_matmul; what it must leave alone is checked too.

// A linear layer: the bias add becomes the GEMM's bias epilogue, even with
// the bias read between the two ops.
// CHECK-LABEL: func.func @linear
// CHECK-NEXT: %[[B:.*]] = graph.parameter_ref @b
// CHECK-NEXT: %[[Y:.*]] = graph.fused_matmul %arg0, %arg1 bias %[[B]] {transpose_rhs} : tensor<4x16x8xf32>, tensor<32x8xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
// CHECK-NEXT: %[[G:.*]] = graph.gelu %[[Y]]
// CHECK-NEXT: return %[[G]]
graph.parameter @b : tensor<32xf32> init(zeros) hf "b"
func.func @linear(%x: tensor<4x16x8xf32>, %w: tensor<32x8xf32>) -> tensor<4x16x32xf32> {
  %0 = graph.matmul %x, %w {transpose_rhs} : tensor<4x16x8xf32>, tensor<32x8xf32> -> tensor<4x16x32xf32>
  %b = graph.parameter_ref @b : tensor<32xf32>
  %1 = graph.bias_add %0, %b : tensor<4x16x32xf32>, tensor<32xf32>
  %2 = graph.gelu %1 : tensor<4x16x32xf32>
  return %2 : tensor<4x16x32xf32>
}

// -----

// Attention scores: the scale after the product becomes alpha, whatever the
// factor; a power-of-two scale of an operand moves into alpha too, one that
// is not a power of two stays (it would change the rounding).
// CHECK-LABEL: func.func @scales
// CHECK-NEXT: %[[S:.*]] = graph.fused_matmul %arg0, %arg1 {alpha = 3.000000e-01 : f64, transpose_rhs}
// CHECK-NEXT: %[[D:.*]] = graph.fused_matmul %arg0, %arg1 {alpha = 1.250000e-01 : f64}
// CHECK-NEXT: %[[T:.*]] = graph.scale %arg0 by 3.000000e-01
// CHECK-NEXT: %[[E:.*]] = graph.matmul %[[T]], %arg1 :
// CHECK-NEXT: return %[[S]], %[[D]], %[[E]]
// With fp16 inputs (fold-operand-scales=false) the operand's scale stays:
// the unscaled operand could overflow fp16 where the scaled one does not.
// FP16-LABEL: func.func @scales
// FP16-NEXT: graph.fused_matmul %arg0, %arg1 {alpha = 3.000000e-01 : f64, transpose_rhs}
// FP16-NEXT: %[[T:.*]] = graph.scale %arg0 by 1.250000e-01
// FP16-NEXT: graph.matmul %[[T]], %arg1 :
func.func @scales(%q: tensor<2x16x16xf32>, %k: tensor<2x16x16xf32>) -> (tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<2x16x16xf32>) {
  %0 = graph.matmul %q, %k {transpose_rhs} : tensor<2x16x16xf32>, tensor<2x16x16xf32> -> tensor<2x16x16xf32>
  %1 = graph.scale %0 by 0.3 : tensor<2x16x16xf32>
  %2 = graph.scale %q by 0.125 : tensor<2x16x16xf32>
  %3 = graph.matmul %2, %k : tensor<2x16x16xf32>, tensor<2x16x16xf32> -> tensor<2x16x16xf32>
  %4 = graph.scale %q by 0.3 : tensor<2x16x16xf32>
  %5 = graph.matmul %4, %k : tensor<2x16x16xf32>, tensor<2x16x16xf32> -> tensor<2x16x16xf32>
  return %1, %3, %5 : tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<2x16x16xf32>
}

// -----

// A linear layer's backward: the bias gradient (sum of dy over its rows)
// comes out of the weight-gradient GEMM, which reads dy through a reshape;
// the input gradient's matmul is left as it is.
// CHECK-LABEL: func.func @backward
// CHECK-NEXT: %[[DX:.*]] = graph.matmul %arg0, %arg2 :
// CHECK-NEXT: %[[R:.*]] = graph.reshape %arg0
// CHECK-NEXT: %[[DW:.*]], %[[DB:.*]] = graph.fused_matmul %[[R]], %arg1 {transpose_lhs} : tensor<64x32xf32>, tensor<64x8xf32> -> tensor<32x8xf32>, tensor<32xf32>
// CHECK-NEXT: graph.accumulate %[[DB]] into @grad.b
// CHECK-NOT: graph.reduce
graph.variable @grad.b : tensor<32xf32> init(zeros) hf "grad.b"
func.func @backward(%dy: tensor<4x16x32xf32>, %x: tensor<64x8xf32>, %w: tensor<32x8xf32>) -> (tensor<4x16x8xf32>, tensor<32x8xf32>) {
  %db = graph.reduce sum %dy dims [0, 1] : tensor<4x16x32xf32> -> tensor<32xf32>
  %dx = graph.matmul %dy, %w : tensor<4x16x32xf32>, tensor<32x8xf32> -> tensor<4x16x8xf32>
  %r = graph.reshape %dy : tensor<4x16x32xf32> -> tensor<64x32xf32>
  %dw = graph.matmul %r, %x {transpose_lhs} : tensor<64x32xf32>, tensor<64x8xf32> -> tensor<32x8xf32>
  graph.accumulate %db into @grad.b : tensor<32xf32>
  return %dx, %dw : tensor<4x16x8xf32>, tensor<32x8xf32>
}

// -----

// Left alone: a product with a second use (the bias add cannot take it
// over), a bias add in another block (fusing would move the GEMM into the
// loop), a sum used before the weight-gradient GEMM (the fused op could not
// define it in time), and a sum over other dimensions.
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: graph.fused_matmul
// CHECK: return
graph.variable @grad.c : tensor<32xf32> init(zeros) hf "grad.c"
func.func @unfused(%x: tensor<64x8xf32>, %w: tensor<32x8xf32>, %b: tensor<32xf32>, %dy: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x8xf32>, tensor<64xf32>, tensor<32x8xf32>) {
  %0 = graph.matmul %x, %w {transpose_rhs} : tensor<64x8xf32>, tensor<32x8xf32> -> tensor<64x32xf32>
  %1 = graph.bias_add %0, %b : tensor<64x32xf32>, tensor<32xf32>
  %2 = graph.matmul %x, %w {transpose_rhs} : tensor<64x8xf32>, tensor<32x8xf32> -> tensor<64x32xf32>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %3 = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %1) -> (tensor<64x32xf32>) {
    %4 = graph.bias_add %2, %b : tensor<64x32xf32>, tensor<32xf32>
    scf.yield %4 : tensor<64x32xf32>
  }
  %db = graph.reduce sum %dy dims [0] : tensor<64x32xf32> -> tensor<32xf32>
  graph.accumulate %db into @grad.c : tensor<32xf32>
  %dw = graph.matmul %dy, %x {transpose_lhs} : tensor<64x32xf32>, tensor<64x8xf32> -> tensor<32x8xf32>
  %rows = graph.reduce sum %dy dims [1] : tensor<64x32xf32> -> tensor<64xf32>
  %dw2 = graph.matmul %dy, %x {transpose_lhs} : tensor<64x32xf32>, tensor<64x8xf32> -> tensor<32x8xf32>
  return %0, %3, %dw, %rows, %dw2 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x8xf32>, tensor<64xf32>, tensor<32x8xf32>
}
