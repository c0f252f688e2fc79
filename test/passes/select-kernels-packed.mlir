// RUN: ferry-opt %s --ferry-select-kernels='programs=forward' | FileCheck %s

// Tests ferry-select-kernels on packed rows: the sequence ids and dropout
// keys are the kernels' last buffers (after the results), and a keyed
// dropout's ints end with the sample's layout (key_layout: 1 a token's
// elements, 2 attention probabilities) and the tokens a row (key_seq). Input
// states: %arg.forward.x, %arg.forward.ids, %arg.forward.keys and
// %arg.forward.s.

// CHECK: rt.program @forward
// CHECK: %[[X:.*]] = rt.slice %arg.forward.x [0] size 256
// CHECK-NEXT: %[[O:.*]] = rt.slice %[[D:.*]] [0] size 256
// CHECK-NEXT: %[[K:.*]] = rt.slice %arg.forward.keys [0] size 64
// CHECK-NEXT: rt.dropout x(%[[X]]) out(%[[O]]) dropout_keys(%[[K]]) {count = array<i64: 64>, key_layout = array<i64: 1>, key_seq = array<i64: 4>, layer = array<i64: 0>, p = 1.000000e-01 : f64, per_sample = array<i64: 32>, purpose = array<i64: {{[0-9]+}}>, sample_offset = array<i64: 0>, seed = array<i64: 0>}
// CHECK: %[[X:.*]] = rt.slice %arg.forward.s [0] size 256
// CHECK-NEXT: %[[M:.*]] = rt.slice %{{.*}} [0] size 32
// CHECK-NEXT: %[[O:.*]] = rt.slice %[[P:.*]] [0] size 256
// CHECK-NEXT: %[[I:.*]] = rt.slice %arg.forward.ids [0] size 32
// CHECK-NEXT: rt.softmax x(%[[X]]) mask(%[[M]]) out(%[[O]]) sequence_ids(%[[I]]) {batch = array<i64: 2>, cols = array<i64: 4>, rows = array<i64: 8>}
// CHECK: %[[X:.*]] = rt.slice %[[P]] [0] size 256
// CHECK-NEXT: %[[O:.*]] = rt.slice %{{.*}} [0] size 256
// CHECK-NEXT: %[[K:.*]] = rt.slice %arg.forward.keys [0] size 64
// CHECK-NEXT: rt.dropout x(%[[X]]) out(%[[O]]) dropout_keys(%[[K]]) {count = array<i64: 64>, key_layout = array<i64: 2>, key_seq = array<i64: 4>, layer = array<i64: 0>, p = 1.000000e-01 : f64, per_sample = array<i64: 32>, purpose = array<i64: {{[0-9]+}}>, sample_offset = array<i64: 0>, seed = array<i64: 0>}

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
