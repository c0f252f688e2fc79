// RUN: ferry-opt %s --split-input-file --ferry-autodiff | FileCheck %s

// Tests ferry-autodiff's rules for the elementwise ops (add, sub, mul, div,
// scale), the summing of the gradients of a value used more than once, and
// which values get gradients: only those that depend on a parameter and feed
// the loss (result 0).

// The entry is kept as it was; @forward_grad is the same forward, then the
// backward seeded with 1, then one accumulate per parameter into a zero
// initialised @grad.<name> variable with the parameter's type.
// CHECK-LABEL: module {
// CHECK-DAG: graph.variable @grad.a : tensor<4xf32> init(zeros) hf "grad.a"
// CHECK-DAG: graph.variable @grad.b : tensor<4xf32> init(zeros) hf "grad.b"
// CHECK-LABEL: func.func @forward() -> tensor<f32>
// CHECK-NOT: graph.accumulate
// CHECK: return
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[A:%.*]] = graph.parameter_ref @a : tensor<4xf32>
// CHECK-NEXT: [[B:%.*]] = graph.parameter_ref @b : tensor<4xf32>
// CHECK-NEXT: [[SUM:%.*]] = graph.add [[A]], [[B]] : tensor<4xf32>
// CHECK-NEXT: [[LOSS:%.*]] = graph.reduce sum [[SUM]] dims [0] : tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0] : tensor<f32> -> tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[G]] into @grad.b : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[G]] into @grad.a : tensor<4xf32>
// CHECK-NEXT: return [[LOSS]] : tensor<f32>
graph.parameter @a : tensor<4xf32> init(normal, 2.000000e-02) hf "a"
graph.parameter @b : tensor<4xf32> init(normal, 2.000000e-02) hf "b"
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<4xf32>
  %b = graph.parameter_ref @b : tensor<4xf32>
  %s = graph.add %a, %b : tensor<4xf32>
  %r = graph.reduce sum %s dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// sub: the lhs gets the gradient, the rhs its negation.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK: graph.reduce sum
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0] : tensor<f32> -> tensor<4xf32>
// CHECK-NEXT: [[NEG:%.*]] = graph.scale [[G]] by -1.000000e+00 : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[NEG]] into @grad.b : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[G]] into @grad.a : tensor<4xf32>
// CHECK-NEXT: return
graph.parameter @a : tensor<4xf32> init(normal, 2.000000e-02) hf "a"
graph.parameter @b : tensor<4xf32> init(normal, 2.000000e-02) hf "b"
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<4xf32>
  %b = graph.parameter_ref @b : tensor<4xf32>
  %d = graph.sub %a, %b : tensor<4xf32>
  %r = graph.reduce sum %d dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// mul: each operand gets the gradient times the other operand.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[A:%.*]] = graph.parameter_ref @a : tensor<2x4xf32>
// CHECK-NEXT: [[B:%.*]] = graph.parameter_ref @b : tensor<2x4xf32>
// CHECK-NEXT: graph.mul [[A]], [[B]] : tensor<2x4xf32>
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT: [[DA:%.*]] = graph.mul [[G]], [[B]] : tensor<2x4xf32>
// CHECK-NEXT: [[DB:%.*]] = graph.mul [[G]], [[A]] : tensor<2x4xf32>
// CHECK-NEXT: graph.accumulate [[DB]] into @grad.b : tensor<2x4xf32>
// CHECK-NEXT: graph.accumulate [[DA]] into @grad.a : tensor<2x4xf32>
// CHECK-NEXT: return
graph.parameter @a : tensor<2x4xf32> init(normal, 2.000000e-02) hf "a"
graph.parameter @b : tensor<2x4xf32> init(normal, 2.000000e-02) hf "b"
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<2x4xf32>
  %b = graph.parameter_ref @b : tensor<2x4xf32>
  %p = graph.mul %a, %b : tensor<2x4xf32>
  %r = graph.reduce sum %p dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// div: d(a/b) = g/b for a and -(g/b) * (a/b) for b, reusing the quotient.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[A:%.*]] = graph.parameter_ref @a : tensor<4xf32>
// CHECK-NEXT: [[B:%.*]] = graph.parameter_ref @b : tensor<4xf32>
// CHECK-NEXT: [[Q:%.*]] = graph.div [[A]], [[B]] : tensor<4xf32>
// CHECK-NEXT: graph.reduce sum [[Q]]
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0] : tensor<f32> -> tensor<4xf32>
// CHECK-NEXT: [[DA:%.*]] = graph.div [[G]], [[B]] : tensor<4xf32>
// CHECK-NEXT: [[T:%.*]] = graph.mul [[DA]], [[Q]] : tensor<4xf32>
// CHECK-NEXT: [[DB:%.*]] = graph.scale [[T]] by -1.000000e+00 : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DB]] into @grad.b : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DA]] into @grad.a : tensor<4xf32>
// CHECK-NEXT: return
graph.parameter @a : tensor<4xf32> init(normal, 2.000000e-02) hf "a"
graph.parameter @b : tensor<4xf32> init(normal, 2.000000e-02) hf "b"
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<4xf32>
  %b = graph.parameter_ref @b : tensor<4xf32>
  %q = graph.div %a, %b : tensor<4xf32>
  %r = graph.reduce sum %q dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// scale: the gradient is scaled by the same factor (here of a scalar loss).
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[DS:%.*]] = graph.scale [[ONE]] by 2.500000e-01 : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[DS]] dims [0] : tensor<f32> -> tensor<4xf32>
// CHECK-NEXT: [[DA:%.*]] = graph.scale [[G]] by 3.000000e+00 : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DA]] into @grad.a : tensor<4xf32>
// CHECK-NEXT: return
graph.parameter @a : tensor<4xf32> init(normal, 2.000000e-02) hf "a"
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<4xf32>
  %s = graph.scale %a by 3.000000e+00 : tensor<4xf32>
  %r = graph.reduce sum %s dims [0] : tensor<4xf32> -> tensor<f32>
  %l = graph.scale %r by 2.500000e-01 : tensor<f32>
  return %l : tensor<f32>
}

// -----

// A parameter read used twice (a * a) adds both uses' gradients into its
// gradient variable, one accumulate each (the lowering makes each producer
// add straight into the accumulator). Operands that do not depend on a parameter (the input %x) get
// no gradient variable; a parameter read only for result 1 (@b) or not at
// all (@unused) gets none either.
// CHECK-LABEL: module {
// CHECK-NOT: @grad.b
// CHECK-NOT: @grad.unused
// CHECK: graph.variable @grad.a : tensor<2x4xf32> init(zeros) hf "grad.a"
// CHECK-NOT: @grad.b
// CHECK-NOT: @grad.unused
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: [[X:%.*]]: tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>)
// CHECK-NEXT: [[A:%.*]] = graph.parameter_ref @a : tensor<2x4xf32>
// CHECK-NEXT: graph.parameter_ref @b
// CHECK-NEXT: graph.parameter_ref @unused
// CHECK-NEXT: [[SQ:%.*]] = graph.mul [[A]], [[A]] : tensor<2x4xf32>
// CHECK-NEXT: graph.mul [[SQ]], [[X]] : tensor<2x4xf32>
// CHECK-NEXT: graph.mul
// CHECK-NEXT: graph.reduce sum
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT: [[DSQ:%.*]] = graph.mul [[G]], [[X]] : tensor<2x4xf32>
// CHECK-NEXT: graph.mul [[G]], [[SQ]] : tensor<2x4xf32>
// CHECK-NEXT: [[D1:%.*]] = graph.mul [[DSQ]], [[A]] : tensor<2x4xf32>
// CHECK-NEXT: [[D2:%.*]] = graph.mul [[DSQ]], [[A]] : tensor<2x4xf32>
// CHECK-NEXT: graph.accumulate [[D1]] into @grad.a : tensor<2x4xf32>
// CHECK-NEXT: graph.accumulate [[D2]] into @grad.a : tensor<2x4xf32>
// CHECK-NOT: graph.accumulate
// CHECK: return
graph.parameter @a : tensor<2x4xf32> init(normal, 2.000000e-02) hf "a"
graph.parameter @b : tensor<2x4xf32> init(normal, 2.000000e-02) hf "b"
graph.parameter @unused : tensor<4xf32> init(zeros) hf "unused"
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) {
  %a = graph.parameter_ref @a : tensor<2x4xf32>
  %b = graph.parameter_ref @b : tensor<2x4xf32>
  %u = graph.parameter_ref @unused : tensor<4xf32>
  %sq = graph.mul %a, %a : tensor<2x4xf32>
  %m = graph.mul %sq, %x : tensor<2x4xf32>
  %t = graph.mul %b, %x : tensor<2x4xf32>
  %r = graph.reduce sum %m dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r, %t : tensor<f32>, tensor<2x4xf32>
}

// -----

// A chain: the gradients of @b from div, sub and add are each added into
// @grad.b, in the order the reverse sweep meets them.
// CHECK-LABEL: func.func @forward_grad() -> tensor<f32>
// CHECK-NEXT: [[A:%.*]] = graph.parameter_ref @a : tensor<4xf32>
// CHECK-NEXT: [[B:%.*]] = graph.parameter_ref @b : tensor<4xf32>
// CHECK-NEXT: [[S:%.*]] = graph.add [[A]], [[B]] : tensor<4xf32>
// CHECK-NEXT: [[D:%.*]] = graph.sub [[S]], [[B]] : tensor<4xf32>
// CHECK-NEXT: [[Q:%.*]] = graph.div [[D]], [[B]] : tensor<4xf32>
// CHECK-NEXT: graph.reduce sum [[Q]]
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[ONE]] dims [0] : tensor<f32> -> tensor<4xf32>
// CHECK-NEXT: [[DD:%.*]] = graph.div [[G]], [[B]] : tensor<4xf32>
// CHECK-NEXT: [[T:%.*]] = graph.mul [[DD]], [[Q]] : tensor<4xf32>
// CHECK-NEXT: [[DB1:%.*]] = graph.scale [[T]] by -1.000000e+00 : tensor<4xf32>
// CHECK-NEXT: [[DB2:%.*]] = graph.scale [[DD]] by -1.000000e+00 : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DB1]] into @grad.b : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DB2]] into @grad.b : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DD]] into @grad.b : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[DD]] into @grad.a : tensor<4xf32>
// CHECK-NEXT: return
graph.parameter @a : tensor<4xf32> init(normal, 2.000000e-02) hf "a"
graph.parameter @b : tensor<4xf32> init(normal, 2.000000e-02) hf "b"
func.func @forward() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<4xf32>
  %b = graph.parameter_ref @b : tensor<4xf32>
  %s = graph.add %a, %b : tensor<4xf32>
  %d = graph.sub %s, %b : tensor<4xf32>
  %q = graph.div %d, %b : tensor<4xf32>
  %r = graph.reduce sum %q dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A parameter read only by a function other than the entry is not
// differentiated (--ferry-autodiff=entry=NAME: autodiff-entry.mlir).
// CHECK-LABEL: module {
// CHECK-NOT: @grad.
// CHECK: func.func @forward_grad(
// CHECK-NOT: graph.accumulate
// CHECK-NOT: func.func @other_grad
graph.parameter @a : tensor<4xf32> init(normal, 2.000000e-02) hf "a"
func.func @other() -> tensor<f32> {
  %a = graph.parameter_ref @a : tensor<4xf32>
  %r = graph.reduce sum %a dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %r = graph.reduce sum %x dims [0] : tensor<4xf32> -> tensor<f32>
  return %r : tensor<f32>
}
