// RUN: ferry-opt %s --split-input-file --ferry-autodiff | FileCheck %s

// Tests ferry-autodiff's rules for matmul (each transpose flag, batched and
// shared rank-2 rhs) and bias_add. With C = op(A) op(B):
//   dA = dC op(B)^T   (or op(B) dC^T when A is stored transposed)
//   dB = op(A)^T dC   (or dC^T op(A) when B is stored transposed)
// A rank-2 rhs shared by every batch entry of lhs sums its gradient over the
// batch: lhs and dC are collapsed to rows with graph.reshape and multiplied
// once. bias_add's bias gradient sums the result gradient over the leading
// dimensions.

// Plain 2-d product: dA = dC B^T, dB = A^T dC.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[A:%.*]] = graph.parameter_ref @a : tensor<2x3xf32>
// CHECK-NEXT: [[B:%.*]] = graph.parameter_ref @b : tensor<3x4xf32>
// CHECK-NEXT: graph.matmul [[A]], [[B]] : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[DC:%.*]] = graph.broadcast [[ONE]] dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT: [[DA:%.*]] = graph.matmul [[DC]], [[B]] {transpose_rhs} : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
// CHECK-NEXT: [[DB:%.*]] = graph.matmul [[A]], [[DC]] {transpose_lhs} : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<3x4xf32>
// CHECK-NEXT: graph.accumulate [[DB]] into @grad.b : tensor<3x4xf32>
// CHECK-NEXT: graph.accumulate [[DA]] into @grad.a : tensor<2x3xf32>
// CHECK-NEXT: return
graph.parameter @a : tensor<2x3xf32> init(normal, 2.000000e-02) hf "a"
graph.parameter @b : tensor<3x4xf32> init(normal, 2.000000e-02) hf "b"
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<2x3xf32>
  %b = graph.parameter_ref @b : tensor<3x4xf32>
  %c = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r = graph.reduce sum %c dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Transposed lhs: C = A^T B gives dA = B dC^T, dB = A dC.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[A:%.*]] = graph.parameter_ref @a : tensor<3x2xf32>
// CHECK-NEXT: [[B:%.*]] = graph.parameter_ref @b : tensor<3x4xf32>
// CHECK-NEXT: graph.matmul [[A]], [[B]] {transpose_lhs} : tensor<3x2xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[DC:%.*]] = graph.broadcast [[ONE]] dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT: [[DA:%.*]] = graph.matmul [[B]], [[DC]] {transpose_rhs} : tensor<3x4xf32>, tensor<2x4xf32> -> tensor<3x2xf32>
// CHECK-NEXT: [[DB:%.*]] = graph.matmul [[A]], [[DC]] : tensor<3x2xf32>, tensor<2x4xf32> -> tensor<3x4xf32>
// CHECK-NEXT: graph.accumulate [[DB]] into @grad.b : tensor<3x4xf32>
// CHECK-NEXT: graph.accumulate [[DA]] into @grad.a : tensor<3x2xf32>
// CHECK-NEXT: return
graph.parameter @a : tensor<3x2xf32> init(normal, 2.000000e-02) hf "a"
graph.parameter @b : tensor<3x4xf32> init(normal, 2.000000e-02) hf "b"
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<3x2xf32>
  %b = graph.parameter_ref @b : tensor<3x4xf32>
  %c = graph.matmul %a, %b {transpose_lhs} : tensor<3x2xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r = graph.reduce sum %c dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Batched attention scores Q K^T: both operands keep their batch dimensions;
// dQ = dS K, dK = dS^T Q.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[Q:%.*]] = graph.parameter_ref @q : tensor<2x2x3x4xf32>
// CHECK-NEXT: [[K:%.*]] = graph.parameter_ref @k : tensor<2x2x3x4xf32>
// CHECK-NEXT: graph.matmul [[Q]], [[K]] {transpose_rhs} : tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32> -> tensor<2x2x3x3xf32>
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[DS:%.*]] = graph.broadcast [[ONE]] dims [0, 1, 2, 3] : tensor<f32> -> tensor<2x2x3x3xf32>
// CHECK-NEXT: [[DQ:%.*]] = graph.matmul [[DS]], [[K]] : tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32> -> tensor<2x2x3x4xf32>
// CHECK-NEXT: [[DK:%.*]] = graph.matmul [[DS]], [[Q]] {transpose_lhs} : tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32> -> tensor<2x2x3x4xf32>
// CHECK-NEXT: graph.accumulate [[DK]] into @grad.k : tensor<2x2x3x4xf32>
// CHECK-NEXT: graph.accumulate [[DQ]] into @grad.q : tensor<2x2x3x4xf32>
// CHECK-NEXT: return
graph.parameter @q : tensor<2x2x3x4xf32> init(normal, 2.000000e-02) hf "q"
graph.parameter @k : tensor<2x2x3x4xf32> init(normal, 2.000000e-02) hf "k"
func.func @forward() -> tensor<f32> {
  %q = graph.parameter_ref @q : tensor<2x2x3x4xf32>
  %k = graph.parameter_ref @k : tensor<2x2x3x4xf32>
  %s = graph.matmul %q, %k {transpose_rhs} : tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32> -> tensor<2x2x3x3xf32>
  %r = graph.reduce sum %s dims [0, 1, 2, 3] : tensor<2x2x3x3xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A linear layer as the builder emits it: x [2, 3, 4] times a shared weight
// stored [out, in] = [5, 4] with transpose_rhs, then a bias. dx = dy W
// (batched lhs, shared rhs); dW = dy^T x with both collapsed to 6 rows; the
// bias gradient sums dy over the two leading dimensions.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[X:%.*]] = graph.parameter_ref @x : tensor<2x3x4xf32>
// CHECK-NEXT: [[W:%.*]] = graph.parameter_ref @w : tensor<5x4xf32>
// CHECK-NEXT: [[BIAS:%.*]] = graph.parameter_ref @bias : tensor<5xf32>
// CHECK-NEXT: [[Y:%.*]] = graph.matmul [[X]], [[W]] {transpose_rhs} : tensor<2x3x4xf32>, tensor<5x4xf32> -> tensor<2x3x5xf32>
// CHECK-NEXT: graph.bias_add [[Y]], [[BIAS]] : tensor<2x3x5xf32>, tensor<5xf32>
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[DY:%.*]] = graph.broadcast [[ONE]] dims [0, 1, 2] : tensor<f32> -> tensor<2x3x5xf32>
// CHECK-NEXT: [[DBIAS:%.*]] = graph.reduce sum [[DY]] dims [0, 1] : tensor<2x3x5xf32> -> tensor<5xf32>
// CHECK-NEXT: [[DX:%.*]] = graph.matmul [[DY]], [[W]] : tensor<2x3x5xf32>, tensor<5x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: [[XROWS:%.*]] = graph.reshape [[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: [[DYROWS:%.*]] = graph.reshape [[DY]] : tensor<2x3x5xf32> -> tensor<6x5xf32>
// CHECK-NEXT: [[DW:%.*]] = graph.matmul [[DYROWS]], [[XROWS]] {transpose_lhs} : tensor<6x5xf32>, tensor<6x4xf32> -> tensor<5x4xf32>
// CHECK-NEXT: graph.accumulate [[DBIAS]] into @grad.bias : tensor<5xf32>
// CHECK-NEXT: graph.accumulate [[DW]] into @grad.w : tensor<5x4xf32>
// CHECK-NEXT: graph.accumulate [[DX]] into @grad.x : tensor<2x3x4xf32>
// CHECK-NEXT: return
graph.parameter @x : tensor<2x3x4xf32> init(normal, 2.000000e-02) hf "x"
graph.parameter @w : tensor<5x4xf32> init(normal, 2.000000e-02) hf "w"
graph.parameter @bias : tensor<5xf32> init(zeros) hf "bias" no_weight_decay
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<2x3x4xf32>
  %w = graph.parameter_ref @w : tensor<5x4xf32>
  %bias = graph.parameter_ref @bias : tensor<5xf32>
  %y = graph.matmul %x, %w {transpose_rhs} : tensor<2x3x4xf32>, tensor<5x4xf32> -> tensor<2x3x5xf32>
  %z = graph.bias_add %y, %bias : tensor<2x3x5xf32>, tensor<5xf32>
  %r = graph.reduce sum %z dims [0, 1, 2] : tensor<2x3x5xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A shared rank-2 rhs stored [in, out] (no transpose): dW = x^T dy on rows.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[X:%.*]] = graph.parameter_ref @x : tensor<2x3x4xf32>
// CHECK-NEXT: [[W:%.*]] = graph.parameter_ref @w : tensor<4x5xf32>
// CHECK-NEXT: graph.matmul [[X]], [[W]] : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[DY:%.*]] = graph.broadcast [[ONE]] dims [0, 1, 2] : tensor<f32> -> tensor<2x3x5xf32>
// CHECK-NEXT: [[DX:%.*]] = graph.matmul [[DY]], [[W]] {transpose_rhs} : tensor<2x3x5xf32>, tensor<4x5xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: [[XROWS:%.*]] = graph.reshape [[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: [[DYROWS:%.*]] = graph.reshape [[DY]] : tensor<2x3x5xf32> -> tensor<6x5xf32>
// CHECK-NEXT: [[DW:%.*]] = graph.matmul [[XROWS]], [[DYROWS]] {transpose_lhs} : tensor<6x4xf32>, tensor<6x5xf32> -> tensor<4x5xf32>
// CHECK-NEXT: graph.accumulate [[DW]] into @grad.w : tensor<4x5xf32>
// CHECK-NEXT: graph.accumulate [[DX]] into @grad.x : tensor<2x3x4xf32>
// CHECK-NEXT: return
graph.parameter @x : tensor<2x3x4xf32> init(normal, 2.000000e-02) hf "x"
graph.parameter @w : tensor<4x5xf32> init(normal, 2.000000e-02) hf "w"
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<2x3x4xf32>
  %w = graph.parameter_ref @w : tensor<4x5xf32>
  %y = graph.matmul %x, %w : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  %r = graph.reduce sum %y dims [0, 1, 2] : tensor<2x3x5xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// bias_add on rank 2 sums the gradient over dimension 0; on rank 1 (the
// bias's own shape) the bias gets the result gradient unchanged. The input
// always gets the result gradient.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[DZ:%.*]] = graph.broadcast [[ONE]] dims [0] : tensor<f32> -> tensor<5xf32>
// CHECK-NEXT: [[DY:%.*]] = graph.broadcast [[ONE]] dims [0, 1] : tensor<f32> -> tensor<3x5xf32>
// CHECK-NEXT: [[DB2:%.*]] = graph.reduce sum [[DY]] dims [0] : tensor<3x5xf32> -> tensor<5xf32>
// CHECK-NEXT: graph.accumulate [[DZ]] into @grad.b1 : tensor<5xf32>
// CHECK-NEXT: graph.accumulate [[DZ]] into @grad.v : tensor<5xf32>
// CHECK-NEXT: graph.accumulate [[DB2]] into @grad.b2 : tensor<5xf32>
// CHECK-NEXT: graph.accumulate [[DY]] into @grad.x : tensor<3x5xf32>
// CHECK-NEXT: return
graph.parameter @x : tensor<3x5xf32> init(normal, 2.000000e-02) hf "x"
graph.parameter @b2 : tensor<5xf32> init(zeros) hf "b2" no_weight_decay
graph.parameter @v : tensor<5xf32> init(normal, 2.000000e-02) hf "v"
graph.parameter @b1 : tensor<5xf32> init(zeros) hf "b1" no_weight_decay
func.func @forward() -> tensor<f32> {
  %x = graph.parameter_ref @x : tensor<3x5xf32>
  %b2 = graph.parameter_ref @b2 : tensor<5xf32>
  %v = graph.parameter_ref @v : tensor<5xf32>
  %b1 = graph.parameter_ref @b1 : tensor<5xf32>
  %y = graph.bias_add %x, %b2 : tensor<3x5xf32>, tensor<5xf32>
  %z = graph.bias_add %v, %b1 : tensor<5xf32>, tensor<5xf32>
  %r1 = graph.reduce sum %y dims [0, 1] : tensor<3x5xf32> -> tensor<f32>
  %r2 = graph.reduce sum %z dims [0] : tensor<5xf32> -> tensor<f32>
  %r = graph.add %r1, %r2 : tensor<f32>
  return %r : tensor<f32>
}
