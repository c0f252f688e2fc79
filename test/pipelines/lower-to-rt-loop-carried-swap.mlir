// RUN: ferry-opt %s --ferry-lower-to-rt='programs=forward' | FileCheck %s

// Tests that the values an scf.for yields are assigned to its carried
// buffers all at once (scf.yield's semantics): here the loop carries
// (a, b) and yields (gelu(a), a), so the new b must be the old a: no kernel
// overwrites a's buffer between the gelu and the copy of a into b (checked
// as: the first slice of a's buffer after the gelu is that copy's source). A
// regression test: this was once wrong.

// CHECK: rt.loop r 0 count 3 {
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena {{\[}}[[A:[0-9]+]]] size 16
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena [{{[0-9]+}}] size 16
// CHECK-NEXT: rt.gelu x(%[[X]]) out(%[[O]])
// CHECK: %[[S:.*]] = rt.slice %arena {{\[}}[[A]]] size 16
// CHECK-NEXT: %[[D:.*]] = rt.slice %arena [{{[0-9]+}}] size 16
// CHECK-NEXT: rt.copy src(%[[S]]) dst(%[[D]])
// CHECK: }
graph.variable @v : tensor<4xf32> init(zeros) hf "v"
func.func @forward(%x: tensor<4xf32> {graph.input = "x"}, %y: tensor<4xf32> {graph.input = "y"}) -> (tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r:2 = scf.for %l = %c0 to %c3 step %c1 iter_args(%a = %x, %b = %y) -> (tensor<4xf32>, tensor<4xf32>) {
    %n = graph.gelu %a : tensor<4xf32>
    scf.yield %n, %a : tensor<4xf32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
