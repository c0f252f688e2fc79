// RUN: ferry-opt %s --ferry-autodiff | FileCheck %s

// Tests ferry-autodiff on the structure the BERT builder emits: block
// functions called from @forward, the encoder layer called in an scf.for over
// stacked parameters, and a parameter used twice (tied embedding).
// * Each differentiated block @B is split into @B_fwd (its results, then the
//   stash: the forward values its backward reads) and @B_bwd (its arguments,
//   the stash, the gradients of its results -> the gradients of the
//   arguments that need one).
// * In the forward loop, every call operand and stash value computed in the
//   loop is stored into a stacked @stash.* variable at the loop index;
//   parameter slices, the loop index and values from outside the loop are not
//   stored.
// * The backward loop runs 0..n-1 and reverses the index (n-1 - i with
//   arith.subi), reloads the stash with graph.parameter_slice, re-slices the
//   parameters, calls @B_bwd and accumulates each stacked parameter's
//   gradient into @grad.*[layer]; the gradient of the carried value is the
//   loop's iter arg.
// * @emb is both the loop's initial value and an operand of @head (a tied
//   parameter): each of its two gradients is added into @grad.emb.

// Declarations: stash variables stacked over the 3 layers, gradient
// variables with the parameter's type and stacking.
// CHECK-DAG: graph.variable @stash.blk.0 : tensor<3x2x4xf32> init(zeros) hf "stash.blk.0.{}" stacked
// CHECK-DAG: graph.variable @stash.blk.1 : tensor<3x2x4xf32> init(zeros) hf "stash.blk.1.{}" stacked
// CHECK-DAG: graph.variable @grad.layer.b : tensor<3x4xf32> init(zeros) hf "grad.layer.{}.b" stacked
// CHECK-DAG: graph.variable @grad.layer.w : tensor<3x4x4xf32> init(zeros) hf "grad.layer.{}.w" stacked
// CHECK-DAG: graph.variable @grad.emb : tensor<2x4xf32> init(zeros) hf "grad.emb"

// The forward half returns the block's result, then the stash (the
// bias_add result that gelu_grad reads).
// CHECK-LABEL: func.func @blk_fwd(
// CHECK-SAME: [[X:%[a-z0-9]+]]: tensor<2x4xf32>, [[SEED:%[a-z0-9]+]]: i64, [[L:%[a-z0-9]+]]: index, [[OFF:%[a-z0-9]+]]: index, [[W:%[a-z0-9]+]]: tensor<4x4xf32>, [[B:%[a-z0-9]+]]: tensor<4xf32>)
// CHECK-SAME: -> (tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK-NEXT: [[Y:%.*]] = graph.matmul [[X]], [[W]] {transpose_rhs}
// CHECK-NEXT: [[Z:%.*]] = graph.bias_add [[Y]], [[B]]
// CHECK-NEXT: [[G:%.*]] = graph.gelu [[Z]]
// CHECK-NEXT: [[D:%.*]] = graph.dropout [[G]], [[SEED]], [[L]], [[OFF]] {probability = 1.000000e-01 : f64, purpose = "out"}
// CHECK-NEXT: return [[D]], [[Z]] : tensor<2x4xf32>, tensor<2x4xf32>

// The backward half: (args, stash, result gradient) -> gradients of x, w, b
// (the integer arguments get none).
// CHECK-LABEL: func.func @blk_bwd(
// CHECK-SAME: [[X:%[a-z0-9]+]]: tensor<2x4xf32>, [[SEED:%[a-z0-9]+]]: i64, [[L:%[a-z0-9]+]]: index, [[OFF:%[a-z0-9]+]]: index, [[W:%[a-z0-9]+]]: tensor<4x4xf32>, [[B:%[a-z0-9]+]]: tensor<4xf32>, [[Z:%[a-z0-9]+]]: tensor<2x4xf32>, [[DD:%[a-z0-9]+]]: tensor<2x4xf32>)
// CHECK-SAME: -> (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>)
// CHECK-NEXT: [[DG:%.*]] = graph.dropout [[DD]], [[SEED]], [[L]], [[OFF]] {probability = 1.000000e-01 : f64, purpose = "out"}
// CHECK-NEXT: [[DZ:%.*]] = graph.gelu_grad [[Z]], [[DG]]
// CHECK-NEXT: [[DB:%.*]] = graph.reduce sum [[DZ]] dims [0]
// CHECK-NEXT: [[DX:%.*]] = graph.matmul [[DZ]], [[W]] :
// CHECK-NEXT: [[DW:%.*]] = graph.matmul [[DZ]], [[X]] {transpose_lhs}
// CHECK-NEXT: return [[DX]], [[DW]], [[DB]] : tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>

// The head needs no stash; only its result 0 (the loss) has a gradient.
// CHECK-LABEL: func.func @head_fwd(
// CHECK-SAME: -> (tensor<f32>, tensor<f32>)
// CHECK-LABEL: func.func @head_bwd(
// CHECK-SAME: [[H:%[a-z0-9]+]]: tensor<2x4xf32>, [[E:%[a-z0-9]+]]: tensor<2x4xf32>, [[DL:%[a-z0-9]+]]: tensor<f32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK-NEXT: [[G:%.*]] = graph.broadcast [[DL]] dims [0, 1]
// CHECK-NEXT: [[DH:%.*]] = graph.mul [[G]], [[E]]
// CHECK-NEXT: [[DE:%.*]] = graph.mul [[G]], [[H]]
// CHECK-NEXT: return [[DH]], [[DE]]

// The entry is unchanged.
// CHECK-LABEL: func.func @forward(
// CHECK: func.call @blk(
// CHECK: call @head(
// CHECK-NOT: graph.store

// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: [[SEED:%[a-z0-9]+]]: i64, [[OFF:%[a-z0-9]+]]: index) -> (tensor<f32>, tensor<f32>)
// CHECK-DAG: [[C0:%.*]] = arith.constant 0 : index
// CHECK-DAG: [[C1:%.*]] = arith.constant 1 : index
// CHECK-DAG: [[C3:%.*]] = arith.constant 3 : index
// CHECK: [[EMB:%.*]] = graph.parameter_ref @emb : tensor<2x4xf32>
// CHECK-NEXT: [[HS:%.*]] = scf.for [[I:%[a-z0-9]+]] = [[C0]] to [[C3]] step [[C1]] iter_args([[ACC:%[a-z0-9]+]] = [[EMB]]) -> (tensor<2x4xf32>) {
// CHECK-NEXT: [[W:%.*]] = graph.parameter_slice @layer.w[[[I]]] : tensor<4x4xf32>
// CHECK-NEXT: [[B:%.*]] = graph.parameter_slice @layer.b[[[I]]] : tensor<4xf32>
// CHECK-NEXT: [[F:%.*]]:2 = func.call @blk_fwd([[ACC]], [[SEED]], [[I]], [[OFF]], [[W]], [[B]])
// CHECK-NEXT: graph.store [[ACC]] into @stash.blk.0[[[I]]] : tensor<2x4xf32>
// CHECK-NEXT: graph.store [[F]]#1 into @stash.blk.1[[[I]]] : tensor<2x4xf32>
// CHECK-NEXT: scf.yield [[F]]#0 : tensor<2x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: [[LOSS:%.*]]:2 = call @head_fwd([[HS]], [[EMB]])
// CHECK-NEXT: [[ONE:%.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: [[HG:%.*]]:2 = call @head_bwd([[HS]], [[EMB]], [[ONE]])
// CHECK-NEXT: [[BC0:%.*]] = arith.constant 0 : index
// CHECK-NEXT: [[BC3:%.*]] = arith.constant 3 : index
// CHECK-NEXT: [[BC1:%.*]] = arith.constant 1 : index
// CHECK-NEXT: [[DEMB_LOOP:%.*]] = scf.for [[J:%[a-z0-9]+]] = [[BC0]] to [[BC3]] step [[BC1]] iter_args([[DACC:%[a-z0-9_]+]] = [[HG]]#0) -> (tensor<2x4xf32>) {
// CHECK-NEXT: [[LAST:%.*]] = arith.constant 2 : index
// CHECK-NEXT: [[LAYER:%.*]] = arith.subi [[LAST]], [[J]] : index
// CHECK-NEXT: [[SX:%.*]] = graph.parameter_slice @stash.blk.0[[[LAYER]]] : tensor<2x4xf32>
// CHECK-NEXT: [[SZ:%.*]] = graph.parameter_slice @stash.blk.1[[[LAYER]]] : tensor<2x4xf32>
// CHECK-NEXT: [[RW:%.*]] = graph.parameter_slice @layer.w[[[LAYER]]] : tensor<4x4xf32>
// CHECK-NEXT: [[RB:%.*]] = graph.parameter_slice @layer.b[[[LAYER]]] : tensor<4xf32>
// CHECK-NEXT: [[BG:%.*]]:3 = func.call @blk_bwd([[SX]], [[SEED]], [[LAYER]], [[OFF]], [[RW]], [[RB]], [[SZ]], [[DACC]])
// CHECK-NEXT: graph.accumulate [[BG]]#2 into @grad.layer.b[[[LAYER]]] : tensor<4xf32>
// CHECK-NEXT: graph.accumulate [[BG]]#1 into @grad.layer.w[[[LAYER]]] : tensor<4x4xf32>
// CHECK-NEXT: scf.yield [[BG]]#0 : tensor<2x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: graph.accumulate [[HG]]#1 into @grad.emb : tensor<2x4xf32>
// CHECK-NEXT: graph.accumulate [[DEMB_LOOP]] into @grad.emb : tensor<2x4xf32>
// CHECK-NOT: graph.accumulate
// CHECK-NEXT: return [[LOSS]]#0, [[LOSS]]#1 : tensor<f32>, tensor<f32>
graph.parameter @emb : tensor<2x4xf32> init(normal, 2.000000e-02) hf "emb"
graph.parameter @layer.w : tensor<3x4x4xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
graph.parameter @layer.b : tensor<3x4xf32> init(zeros) hf "layer.{}.b" stacked no_weight_decay
func.func @blk(%x: tensor<2x4xf32>, %seed: i64, %l: index, %offset: index, %w: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = graph.matmul %x, %w {transpose_rhs} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %z = graph.bias_add %y, %b : tensor<2x4xf32>, tensor<4xf32>
  %g = graph.gelu %z : tensor<2x4xf32>
  %d = graph.dropout %g, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}
func.func @head(%h: tensor<2x4xf32>, %e: tensor<2x4xf32>) -> (tensor<f32>, tensor<f32>) {
  %m = graph.mul %h, %e : tensor<2x4xf32>
  %r = graph.reduce sum %m dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  %q = graph.reduce sum_squares %h dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %r, %q : tensor<f32>, tensor<f32>
}
func.func @forward(%seed: i64, %offset: index) -> (tensor<f32>, tensor<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %e = graph.parameter_ref @emb : tensor<2x4xf32>
  %h = scf.for %l = %c0 to %c3 step %c1 iter_args(%x = %e) -> (tensor<2x4xf32>) {
    %w = graph.parameter_slice @layer.w[%l] : tensor<4x4xf32>
    %b = graph.parameter_slice @layer.b[%l] : tensor<4xf32>
    %y = func.call @blk(%x, %seed, %l, %offset, %w, %b) : (tensor<2x4xf32>, i64, index, index, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    scf.yield %y : tensor<2x4xf32>
  }
  %loss:2 = func.call @head(%h, %e) : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<f32>, tensor<f32>)
  return %loss#0, %loss#1 : tensor<f32>, tensor<f32>
}
