// RUN: ferry-opt %s --ferry-select-kernels='programs=forward' | FileCheck %s

// Tests ferry-select-kernels on packed rows: the sequence ids and dropout
// keys are the kernels' last buffers (after the results), and a keyed
// dropout's ints end with the sample's layout (1 a token's elements, 2
// attention probabilities) and the tokens a row. Input states: x (buffer
// 0), ids (1), keys (2), s (3).

// CHECK: rt.program @forward
// CHECK: rt.call "dropout" buffers [array<i64: 0, 256, 0>, array<i64: [[D:[0-9]+]], 256, 0>, array<i64: 2, 64, 0>] ints [array<i64: 64>, array<i64: 32>, array<i64: 0>, array<i64: {{[0-9]+}}>, array<i64: 0>, array<i64: 0>, array<i64: 1>, array<i64: 4>] floats [1.000000e-01]
// CHECK: rt.call "softmax" buffers [array<i64: 3, 256, 0>, array<i64: {{[0-9]+}}, 32, 0>, array<i64: [[P:[0-9]+]], 256, 0>, array<i64: 1, 32, 0>] ints [array<i64: 2>, array<i64: 8>, array<i64: 4>] floats []
// CHECK: rt.call "dropout" buffers [array<i64: [[P]], 256, 0>, array<i64: {{[0-9]+}}, 256, 0>, array<i64: 2, 64, 0>] ints [array<i64: 64>, array<i64: 32>, array<i64: 0>, array<i64: {{[0-9]+}}>, array<i64: 0>, array<i64: 0>, array<i64: 2>, array<i64: 4>] floats [1.000000e-01]

module {
  func.func @forward(%x: tensor<2x4x8xf32> {graph.input = "x"},
                     %ids: tensor<2x4xi32> {graph.input = "ids"},
                     %keys: tensor<2x4x2xi32> {graph.input = "keys"},
                     %s: tensor<2x2x4x4xf32> {graph.input = "s"}) -> (tensor<2x4x8xf32>, tensor<2x2x4x4xf32>) {
    %seed = arith.constant 0 : i64
    %c0 = arith.constant 0 : index
    %d = graph.dropout %x, %seed, %c0, %c0 keys %keys {probability = 1.000000e-01 : f64, purpose = "hidden"} : tensor<2x4x8xf32> keys tensor<2x4x2xi32>
    %mask = arith.constant dense<0.0> : tensor<2x4xf32>
    %p = graph.softmax %s, %mask sequences %ids : tensor<2x2x4x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>
    %pd = graph.dropout %p, %seed, %c0, %c0 keys %keys {probability = 1.000000e-01 : f64, purpose = "probs"} : tensor<2x2x4x4xf32> keys tensor<2x4x2xi32>
    return %d, %pd : tensor<2x4x8xf32>, tensor<2x2x4x4xf32>
  }
}
