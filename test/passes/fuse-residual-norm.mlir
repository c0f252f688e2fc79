// RUN: ferry-opt %s --split-input-file --ferry-fuse-residual-norm | FileCheck %s

// ferry-fuse-residual-norm: a sublayer's dropout, residual add and layer
// norm become one graph.residual_layer_norm; the add's result (the sum,
// which the layer norm's gradient reads) is its first result.

// Training: the dropout folds in (it is the add's left or right operand),
// and a later use of the sum (the stash) takes the fused op's sum.
// CHECK-LABEL: func.func @training
// CHECK-NEXT: %[[S:.*]], %[[Y:.*]] = graph.residual_layer_norm %arg0, %arg1, %arg2, %arg3 eps 9.9999999999999998E-13 dropout %arg4, %arg5, %arg6 {probability = 1.000000e-01 : f64, purpose = "ffn.output"} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NEXT: graph.store %[[S]] into @stash.sum
// CHECK-NEXT: %[[S2:.*]], %[[Y2:.*]] = graph.residual_layer_norm %arg0, %[[Y]], %arg2, %arg3 eps {{.*}} dropout %arg4, %arg5, %arg6 {probability = 1.000000e-01 : f64, purpose = "attention.output"}
// CHECK-NEXT: return %[[Y2]]
graph.variable @stash.sum : tensor<2x4x8xf32> init(zeros) hf "stash.sum"
func.func @training(%y: tensor<2x4x8xf32>, %res: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                    %seed: i64, %l: index, %off: index) -> tensor<2x4x8xf32> {
  %d = graph.dropout %y, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "ffn.output"} : tensor<2x4x8xf32>
  %s = graph.add %d, %res : tensor<2x4x8xf32>
  %o = graph.layer_norm %s, %g, %b eps 9.9999999999999998E-13 : tensor<2x4x8xf32>, tensor<8xf32>
  graph.store %s into @stash.sum : tensor<2x4x8xf32>
  %d2 = graph.dropout %y, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.output"} : tensor<2x4x8xf32>
  %s2 = graph.add %o, %d2 : tensor<2x4x8xf32>
  %o2 = graph.layer_norm %s2, %g, %b eps 9.9999999999999998E-13 : tensor<2x4x8xf32>, tensor<8xf32>
  return %o2 : tensor<2x4x8xf32>
}

// -----

// Packed rows: the dropout's keys go with it.
// CHECK-LABEL: func.func @packed
// CHECK-NEXT: %{{.*}}, %[[Y:.*]] = graph.residual_layer_norm %arg0, %arg1, %arg2, %arg3 eps 9.9999999999999998E-13 dropout %arg4, %arg5, %arg6 keys %arg7 {probability = 1.000000e-01 : f64, purpose = "ffn.output"} : tensor<2x4x8xf32>, tensor<8xf32> keys tensor<2x4x2xi32>
// CHECK-NEXT: return %[[Y]]
func.func @packed(%y: tensor<2x4x8xf32>, %res: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                  %seed: i64, %l: index, %off: index, %keys: tensor<2x4x2xi32>) -> tensor<2x4x8xf32> {
  %d = graph.dropout %y, %seed, %l, %off keys %keys {probability = 1.000000e-01 : f64, purpose = "ffn.output"} : tensor<2x4x8xf32> keys tensor<2x4x2xi32>
  %s = graph.add %d, %res : tensor<2x4x8xf32>
  %o = graph.layer_norm %s, %g, %b eps 9.9999999999999998E-13 : tensor<2x4x8xf32>, tensor<8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Evaluation (no dropout), and the embeddings' sum of sums: the last add
// and the layer norm fuse without a dropout.
// CHECK-LABEL: func.func @no_dropout
// CHECK-NEXT: %[[A:.*]] = graph.add %arg0, %arg1
// CHECK-NEXT: %{{.*}}, %[[Y:.*]] = graph.residual_layer_norm %[[A]], %arg1, %arg2, %arg3 eps 9.9999999999999998E-13 : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @no_dropout(%x: tensor<2x4x8xf32>, %res: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %a = graph.add %x, %res : tensor<2x4x8xf32>
  %s = graph.add %a, %res : tensor<2x4x8xf32>
  %o = graph.layer_norm %s, %g, %b eps 9.9999999999999998E-13 : tensor<2x4x8xf32>, tensor<8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Left alone: a sum used before the layer norm (the fused op, at the layer
// norm, could not define it in time); a layer norm of something else. A
// dropout with a second use stays a kernel of its own, the add and norm
// still fuse.
// CHECK-LABEL: func.func @partly
// CHECK-NEXT: graph.add
// CHECK-NEXT: graph.store
// CHECK-NEXT: graph.layer_norm
// CHECK-NEXT: graph.gelu
// CHECK-NEXT: graph.layer_norm
// CHECK-NEXT: %[[D:.*]] = graph.dropout
// CHECK-NEXT: graph.residual_layer_norm %[[D]], %arg1, %arg2, %arg3 eps {{[^ ]+}} :
// CHECK-NEXT: return
graph.variable @stash.early : tensor<2x4x8xf32> init(zeros) hf "stash.early"
func.func @partly(%x: tensor<2x4x8xf32>, %res: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                  %seed: i64, %l: index, %off: index) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %s = graph.add %x, %res : tensor<2x4x8xf32>
  graph.store %s into @stash.early : tensor<2x4x8xf32>
  %o = graph.layer_norm %s, %g, %b eps 9.9999999999999998E-13 : tensor<2x4x8xf32>, tensor<8xf32>
  %h = graph.gelu %x : tensor<2x4x8xf32>
  %o2 = graph.layer_norm %h, %g, %b eps 9.9999999999999998E-13 : tensor<2x4x8xf32>, tensor<8xf32>
  %d = graph.dropout %x, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "p"} : tensor<2x4x8xf32>
  %s3 = graph.add %d, %res : tensor<2x4x8xf32>
  %o3 = graph.layer_norm %s3, %g, %b eps 9.9999999999999998E-13 : tensor<2x4x8xf32>, tensor<8xf32>
  return %o, %o2, %o3, %d : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}
