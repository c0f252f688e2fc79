// RUN: ferry-opt %s --ferry-lower-to-rt='programs=forward' | FileCheck %s

// Tests that ferry-lower-to-rt works on a module that holds no graph op (a
// program that only copies its input to its output). A regression test: this was once wrong.

// CHECK: rt.state @arg.forward.x : tensor<4xf32> role "input" at 0 size 16
// CHECK: rt.state @output.forward.0 : tensor<4xf32> role "output" at 64 size 16
// CHECK: rt.program @forward inputs [] registers 0 transient 0
// CHECK-NEXT: %arena = rt.arena
// CHECK-NEXT: %[[S:.*]] = rt.slice %arena [0] size 16
// CHECK-NEXT: %[[D:.*]] = rt.slice %arena [64] size 16
// CHECK-NEXT: rt.copy src(%[[S]]) dst(%[[D]]) {bytes = array<i64: 16>}
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
