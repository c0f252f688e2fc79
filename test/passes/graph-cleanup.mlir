// RUN: ferry-opt %s --split-input-file --ferry-graph-cleanup | FileCheck %s

// Tests that repeated parameter reads and index constants are merged, as
// `ferry compile` does after the BERT builder.
// CHECK-LABEL: func.func @repeated_reads
// CHECK-COUNT-1: graph.parameter_ref @w
// CHECK-NOT: graph.parameter_ref
// CHECK: %[[Y:.*]] = graph.matmul %{{.*}}, %[[W:.*]] {transpose_rhs}
// CHECK: graph.matmul %[[Y]], %[[W]] {transpose_rhs}
module {
  graph.parameter @w : tensor<8x8xf32> init(normal, 2.000000e-02) hf "w"
  func.func @repeated_reads(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %w0 = graph.parameter_ref @w : tensor<8x8xf32>
    %y = graph.matmul %x, %w0 {transpose_rhs} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %w1 = graph.parameter_ref @w : tensor<8x8xf32>
    %z = graph.matmul %y, %w1 {transpose_rhs} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    return %z : tensor<4x8xf32>
  }
}

// -----

// Tests that ops whose results are unused are removed (graph ops have no side
// effects), while the layer loop and the parameter declarations stay.
// CHECK-LABEL: func.func @dead_ops
// CHECK-NOT: graph.gelu
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: scf.for %[[L:.*]] = %{{.*}} to %[[C3]]
// CHECK: graph.parameter_slice @stack[%[[L]]]
module {
  graph.parameter @stack : tensor<3x4xf32> init(zeros) hf "s.{}" stacked
  func.func @dead_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
    %unused = graph.gelu %x : tensor<4xf32>
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c1 = arith.constant 1 : index
    %r = scf.for %l = %c0 to %c3 step %c1 iter_args(%acc = %x) -> (tensor<4xf32>) {
      %s = graph.parameter_slice @stack[%l] : tensor<4xf32>
      %n = graph.add %acc, %s : tensor<4xf32>
      scf.yield %n : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}
