// RUN: ferry-opt %s --split-input-file --ferry-lower-to-rt='programs=forward' | FileCheck %s

// Tests that a splat i32 constant lowers to fill_i32 (count, value), into
// the program's output here, and that storing one fills the destination
// state directly, as f32 splats do with fill.

// CHECK: rt.state @output.forward.0 : tensor<4xi32> role "output" at [[OUT:[0-9]+]] size 16
// CHECK-LABEL: rt.program @forward
// CHECK-NEXT: %arena = rt.arena
// CHECK-NEXT: %[[D:.*]] = rt.slice %arena {{\[}}[[OUT]]] size 16
// CHECK-NEXT: rt.fill_i32 dst(%[[D]]) {count = array<i64: 4>, value = array<i64: -3>}
// CHECK-NEXT: }
func.func @forward() -> tensor<4xi32> {
  %c = arith.constant dense<-3> : tensor<4xi32>
  return %c : tensor<4xi32>
}

// -----

// CHECK: rt.state @ids : tensor<8xi32> role "state" at [[IDS:[0-9]+]] size 32
// CHECK-LABEL: rt.program @forward
// CHECK-NEXT: %arena = rt.arena
// CHECK-NEXT: %[[D:.*]] = rt.slice %arena {{\[}}[[IDS]]] size 32
// CHECK-NEXT: rt.fill_i32 dst(%[[D]]) {count = array<i64: 8>, value = array<i64: 7>}
// CHECK-NEXT: }
graph.variable @ids : tensor<8xi32> init(zeros) hf "ids"
func.func @forward() {
  %c = arith.constant dense<7> : tensor<8xi32>
  graph.store %c into @ids : tensor<8xi32>
  return
}
