// RUN: ferry-opt %s --ferry-lower-to-rt='programs=forward' | FileCheck %s
// RUN: ferry-opt %s --ferry-lower-to-rt='programs=forward,scale' | FileCheck %s --check-prefix=TWO

// Tests ferry-lower-to-rt on a small graph module:
// * every graph.parameter / graph.variable, plus an input state per tensor
//   argument and an output state per result of each program, becomes an
//   rt.state at a 64-byte aligned offset, with a role from its kind or name
//   prefix (parameter, gradient, optimizer_state, metric, stash, input,
//   output, state);
// * integer and index arguments become the program's input registers
//   (seed r0, sample_offset r1), the scf.for becomes rt.loop with its own
//   register r2;
// * each op becomes one kernel with its shape as integers; reshapes and state
//   reads are views (no kernel); a parameter_slice at (2 - l) addresses
//   base + 2 * 16 - 16 * r2;
// * temporaries are placed above the states by the liveness-based plan: the
//   matmul result, dead after the gelu, shares its offset with the loop's
//   carried buffer; bias_add / mul and dropout / add share pairwise inside the
//   loop body.

// CHECK-LABEL: module attributes {rt.alignment = 64 : i64, rt.arena_bytes = 1920 : i64, rt.parameter_count = 44 : i64, rt.state_bytes = 1408 : i64} {
// CHECK-NEXT: rt.state @arg.forward.x : tensor<2x3x8xf32> role "input" at 0 size 192 {hf = "arg.forward.x", init = "zeros", init_std = 0.000000e+00 : f64}
// CHECK-NEXT: rt.state @arg.forward.h : tensor<2x3x4xf32> role "input" at 192 size 96 {hf = "arg.forward.h", init = "zeros", init_std = 0.000000e+00 : f64}
// CHECK-NEXT: rt.state @output.forward.0 : tensor<6x4xf32> role "output" at 320 size 96 {hf = "output.forward.0", init = "zeros", init_std = 0.000000e+00 : f64}
// CHECK-NEXT: rt.state @w : tensor<4x8xf32> role "parameter" at 448 size 128 {hf = "w", init = "normal", init_std = 2.000000e-02 : f64}
// CHECK-NEXT: rt.state @layer.b : tensor<3x4xf32> role "parameter" at 576 size 48 {hf = "layer.{}.b", init = "zeros", init_std = 0.000000e+00 : f64, no_weight_decay, stacked}
// CHECK-NEXT: rt.state @grad.w : tensor<4x8xf32> role "gradient" at 640 size 128 {hf = "grad.w", init = "zeros", init_std = 0.000000e+00 : f64}
// CHECK-NEXT: rt.state @adam_m.w : tensor<4x8xf32> role "optimizer_state" at 768 size 128 {hf = "optimizer.m.w", init = "zeros", init_std = 0.000000e+00 : f64}
// CHECK-NEXT: rt.state @metric.loss : tensor<f32> role "metric" at 896 size 4 {hf = "metric.loss", init = "zeros", init_std = 0.000000e+00 : f64}
// CHECK-NEXT: rt.state @stash.blk.0 : tensor<3x6x4xf32> role "stash" at 960 size 288 {hf = "stash.blk.0.{}", init = "zeros", init_std = 0.000000e+00 : f64, stacked}
// CHECK-NEXT: rt.state @input.ids : tensor<2x3xi32> role "input" at 1280 size 24 {hf = "input.ids", init = "zeros", init_std = 0.000000e+00 : f64}
// CHECK-NEXT: rt.state @count : tensor<5xi32> role "state" at 1344 size 20 {hf = "count", init = "zeros", init_std = 0.000000e+00 : f64}
// CHECK-NEXT: rt.program @forward inputs ["seed", "sample_offset"] registers 3 transient 512 attributes {rt.max_live_bytes = 512 : i64} {
// CHECK-NEXT: %arena = rt.arena

// gemm ints: the shared rhs (a linear layer's weight) makes the batch of 2
// one GEMM of 2 x 3 rows: batch 1, m 6, n 4, k 8, no transposed lhs,
// transposed rhs, strides m*k = 48, k*n = 32, m*n = 24, no accumulation.
// The first temporary starts where the states end.
// CHECK-NEXT: %[[A:.*]] = rt.slice %arena [0] size 192
// CHECK-NEXT: %[[B:.*]] = rt.slice %arena [448] size 128
// CHECK-NEXT: %[[C:.*]] = rt.slice %arena {{\[}}[[T1:1408]]] size 96
// CHECK-NEXT: rt.gemm a(%[[A]]) b(%[[B]]) c(%[[C]]) {accumulate = array<i64: 0>, alpha = 1.000000e+00 : f64, batch = array<i64: 1>, k = array<i64: 8>, m = array<i64: 6>, n = array<i64: 4>, stride_a = array<i64: 48>, stride_b = array<i64: 32>, stride_c = array<i64: 24>, trans_a = array<i64: 0>, trans_b = array<i64: 1>}
// The reshape is a view: gelu reads the gemm's buffer.
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena {{\[}}[[T1]]] size 96
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena {{\[}}[[G:[0-9]+]]] size 96
// CHECK-NEXT: rt.gelu x(%[[X]]) out(%[[O]]) {count = array<i64: 24>}
// The carried buffer is initialised from the (reshaped) input state and
// reuses the gemm result's offset.
// CHECK-NEXT: %[[S:.*]] = rt.slice %arena [192] size 96
// CHECK-NEXT: %[[D:.*]] = rt.slice %arena {{\[}}[[T1]]] size 96
// CHECK-NEXT: rt.copy src(%[[S]]) dst(%[[D]]) {bytes = array<i64: 96>}
// CHECK-NEXT: rt.loop r 2 count 3 {
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena {{\[}}[[T1]]] size 96
// CHECK-NEXT: %[[B:.*]] = rt.slice %arena [608, 0, 0, -16] size 16
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena {{\[}}[[Z:[0-9]+]]] size 96
// CHECK-NEXT: rt.bias_add x(%[[X]]) bias(%[[B]]) out(%[[O]]) {cols = array<i64: 4>, rows = array<i64: 6>}
// dropout ints: count, per-sample count, seed (r0), purpose hash, layer (r2),
// sample offset (r1).
// CHECK-NEXT: %[[X:.*]] = rt.slice %arena {{\[}}[[Z]]] size 96
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena {{\[}}[[D:[0-9]+]]] size 96
// CHECK-NEXT: rt.dropout x(%[[X]]) out(%[[O]]) {count = array<i64: 24>, layer = array<i64: 0, 0, 0, 1>, p = 1.000000e-01 : f64, per_sample = array<i64: 4>, purpose = array<i64: {{[0-9]+}}>, sample_offset = array<i64: 0, 0, 1>, seed = array<i64: 0, 1>}
// CHECK-NEXT: %[[A:.*]] = rt.slice %arena {{\[}}[[D]]] size 96
// CHECK-NEXT: %[[B:.*]] = rt.slice %arena {{\[}}[[G]]] size 96
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena {{\[}}[[Z]]] size 96
// CHECK-NEXT: rt.mul a(%[[A]]) b(%[[B]]) out(%[[O]]) {count = array<i64: 24>}
// CHECK-NEXT: %[[A:.*]] = rt.slice %arena {{\[}}[[Z]]] size 96
// CHECK-NEXT: %[[B:.*]] = rt.slice %arena {{\[}}[[T1]]] size 96
// CHECK-NEXT: %[[O:.*]] = rt.slice %arena {{\[}}[[D]]] size 96
// CHECK-NEXT: rt.add a(%[[A]]) b(%[[B]]) out(%[[O]]) {count = array<i64: 24>}
// CHECK-NEXT: %[[S:.*]] = rt.slice %arena {{\[}}[[D]]] size 96
// CHECK-NEXT: %[[T:.*]] = rt.slice %arena {{\[}}[[T1]]] size 96
// CHECK-NEXT: rt.copy src(%[[S]]) dst(%[[T]]) {bytes = array<i64: 96>}
// CHECK-NEXT: }
// CHECK-NEXT: %[[S:.*]] = rt.slice %arena {{\[}}[[T1]]] size 96
// CHECK-NEXT: %[[T:.*]] = rt.slice %arena [320] size 96
// CHECK-NEXT: rt.copy src(%[[S]]) dst(%[[T]]) {bytes = array<i64: 96>}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: graph.
// CHECK-NOT: func.func

// Two programs share the states; each has its own registers and plan.
// TWO-LABEL: module attributes
// TWO-DAG: rt.state @arg.forward.x : tensor<2x3x8xf32> role "input"
// TWO-DAG: rt.state @arg.scale.v : tensor<4xf32> role "input"
// TWO-DAG: rt.state @output.scale.0 : tensor<4xf32> role "output"
// TWO: rt.program @forward inputs ["seed", "sample_offset"] registers 3
// TWO: rt.program @scale inputs ["n"] registers 1 transient {{[0-9]+}}
// TWO-NEXT: %arena = rt.arena
// TWO-NEXT: rt.slice
// TWO-NEXT: rt.slice
// TWO-NEXT: rt.scale
// TWO-SAME: {count = array<i64: 4>, factor = 5.000000e-01 : f64}
graph.parameter @w : tensor<4x8xf32> init(normal, 2.000000e-02) hf "w"
graph.parameter @layer.b : tensor<3x4xf32> init(zeros) hf "layer.{}.b" stacked no_weight_decay
graph.variable @grad.w : tensor<4x8xf32> init(zeros) hf "grad.w"
graph.variable @adam_m.w : tensor<4x8xf32> init(zeros) hf "optimizer.m.w"
graph.variable @metric.loss : tensor<f32> init(zeros) hf "metric.loss"
graph.variable @stash.blk.0 : tensor<3x6x4xf32> init(zeros) hf "stash.blk.0.{}" stacked
graph.variable @input.ids : tensor<2x3xi32> init(zeros) hf "input.ids"
graph.variable @count : tensor<5xi32> init(zeros) hf "count"
func.func @forward(%x: tensor<2x3x8xf32> {graph.input = "x"}, %h0: tensor<2x3x4xf32> {graph.input = "h"},
                   %seed: i64 {graph.input = "seed"}, %offset: index {graph.input = "sample_offset"}) -> tensor<6x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %w = graph.parameter_ref @w : tensor<4x8xf32>
  %y = graph.matmul %x, %w {transpose_rhs} : tensor<2x3x8xf32>, tensor<4x8xf32> -> tensor<2x3x4xf32>
  %r = graph.reshape %y : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %g = graph.gelu %r : tensor<6x4xf32>
  %h = graph.reshape %h0 : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %o = scf.for %l = %c0 to %c3 step %c1 iter_args(%a = %h) -> (tensor<6x4xf32>) {
    %rev = arith.subi %c2, %l : index
    %b = graph.parameter_slice @layer.b[%rev] : tensor<4xf32>
    %z = graph.bias_add %a, %b : tensor<6x4xf32>, tensor<4xf32>
    %d = graph.dropout %z, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "p"} : tensor<6x4xf32>
    %m = graph.mul %d, %g : tensor<6x4xf32>
    %e = graph.add %m, %a : tensor<6x4xf32>
    scf.yield %e : tensor<6x4xf32>
  }
  return %o : tensor<6x4xf32>
}
func.func @scale(%v: tensor<4xf32> {graph.input = "v"}, %n: index {graph.input = "n"}) -> tensor<4xf32> {
  %s = graph.scale %v by 5.000000e-01 : tensor<4xf32>
  return %s : tensor<4xf32>
}
