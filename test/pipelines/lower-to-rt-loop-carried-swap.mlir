// RUN: ferry-opt %s --ferry-lower-to-rt='programs=forward' | FileCheck %s

// Tests that the values an scf.for yields are assigned to its carried
// buffers all at once (scf.yield's semantics): here the loop carries
// (a, b) and yields (gelu(a), a), so the new b must be the old a. A regression test: this was once wrong.

// CHECK: rt.loop r 0 count 3 {
// CHECK-NEXT: rt.kernel "gelu" buffers [array<i64: 16, [[A:[0-9]+]]>, array<i64: 16, {{[0-9]+}}>]
// CHECK-NOT: , array<i64: 16, [[A]]>] ints
// CHECK: rt.kernel "copy" buffers [array<i64: 16, [[A]]>, array<i64: 16, {{[0-9]+}}>]
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
