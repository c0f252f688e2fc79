// RUN: ferry-opt %s --ferry-autodiff --ferry-insert-optimizer --ferry-batch-serialise --ferry-phased-execution --cse --canonicalize "--ferry-lower-to-rt=programs=train_step device-budget=600000" | FileCheck %s
// RUN: ferry-opt %s --ferry-autodiff --ferry-insert-optimizer --ferry-batch-serialise --ferry-phased-execution --cse --canonicalize "--ferry-lower-to-rt=programs=train_step device-budget=600000 prefetch=false" | FileCheck %s --check-prefix=OFF

// Prefetch in ferry-lower-to-rt: with room for double buffers (600000
// bytes), a remote range that a layer loop's phase reads at the layer index
// is loaded one layer ahead. The loop gets a parity register (counter & 1);
// the staging buffer has two halves, the kernels of layer r use half
// (r & 1):
// * before the loop, during the phase before it (embed.fwd, which does not
//   write them): layer 0's weights into half 0, so they arrive while the
//   embeddings compute;
// * at the start of layer r: wait for them, then issue layer r + 1's into the
//   other half (address 65536 - 65536 * parity), guarded by r + 1 < 2, so the
//   copy thread loads while layer r computes;
// * after the loop: a wait that also holds the buffer live over the loop
//   (the memory plan must not reuse either half meanwhile).
// With prefetch=false the same range is loaded when the phase starts.

// CHECK: rt.prefetch = "on (next layer and next micro-batch, the first layer during the phase before its loop); {{[0-9]+}} staged ranges double-buffered
// CHECK: rt.kernel "phase_begin" buffers [] ints [array<i64: 0>]
// CHECK-NEXT: rt.kernel "load" buffers [array<i64: 65536, 0, 0, 0, 0>, array<i64: 65536, [[B:[0-9]+]]>] ints [array<i64: 65536>, array<i64: [[E:[0-9]+]]>]
// CHECK-NEXT: rt.loop r 1 count 2 {
// CHECK: rt.kernel "phase_end" buffers [] ints [array<i64: 0>]
// CHECK-NEXT: rt.loop r 2 count 2 parity r [[P:[0-9]+]] {
// CHECK-NEXT: rt.kernel "phase_begin" buffers [] ints [array<i64: 1>]
// CHECK-NEXT: rt.kernel "wait" buffers [] ints [array<i64: [[E]]>]
// CHECK-NEXT: rt.kernel "load" buffers [array<i64: 65536, 65536, 0, 0, 65536>, array<i64: 65536, {{[0-9]+}}, {{.*}}, -65536>] ints [array<i64: 65536>, array<i64: [[E]]>, array<i64: 1, 0, 0, 1>, array<i64: 2>]
// CHECK-NEXT: rt.loop r 3 count 2 {
// The layer's input (@stash.carry) kept for the backward (@stash.x).
// CHECK-NEXT: rt.kernel "copy"
// CHECK-NEXT: rt.kernel "gemm" buffers [{{.*}}, array<i64: 65536, [[B]], {{.*}}, 65536>, {{.*}}]
// CHECK: rt.kernel "phase_end" buffers [] ints [array<i64: 1>]
// CHECK-NEXT: }
// CHECK-NEXT: rt.kernel "wait" buffers [array<i64: 131072, [[B]]>] ints [array<i64: [[E]]>]

// OFF: rt.prefetch = "off (execution.prefetch: false); 0 staged ranges double-buffered
// OFF: rt.loop r 2 count 2 {
// OFF-NEXT: rt.kernel "phase_begin" buffers [] ints [array<i64: 1>]
// OFF-NEXT: rt.kernel "load" buffers [array<i64: 65536, 0, 0, 0, 65536>, array<i64: 65536, {{[0-9]+}}>]
// OFF-NEXT: rt.kernel "wait"

module attributes {ferry.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 4 : i64, lr = 1.000000e-03 : f64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @emb : tensor<128xf32> init(normal, 2.000000e-02) hf "emb"
  graph.parameter @layer.w : tensor<2x128x128xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
  func.func @embed(%x: tensor<2x128xf32>, %e: tensor<128xf32>) -> tensor<2x128xf32> {
    %y = graph.bias_add %x, %e : tensor<2x128xf32>, tensor<128xf32>
    return %y : tensor<2x128xf32>
  }
  func.func @blk(%x: tensor<2x128xf32>, %seed: i64, %l: index, %offset: index, %w: tensor<128x128xf32>) -> tensor<2x128xf32> {
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<2x128xf32>, tensor<128x128xf32> -> tensor<2x128xf32>
    %g = graph.gelu %y : tensor<2x128xf32>
    %d = graph.dropout %g, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x128xf32>
    return %d : tensor<2x128xf32>
  }
  func.func @head(%h: tensor<2x128xf32>, %count: tensor<f32>) -> tensor<f32> {
    %s = graph.reduce sum_squares %h dims [0, 1] : tensor<2x128xf32> -> tensor<f32>
    %l = graph.div %s, %count : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @forward(%x: tensor<2x128xf32> {ferry.input = "x"}, %count: tensor<f32> {ferry.input = "mlm_count"}, %seed: i64 {ferry.input = "seed"}, %offset: index {ferry.input = "sample_offset"}) -> tensor<f32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %e = graph.parameter_ref @emb : tensor<128xf32>
    %x0 = func.call @embed(%x, %e) : (tensor<2x128xf32>, tensor<128xf32>) -> tensor<2x128xf32>
    %h = scf.for %l = %c0 to %c2 step %c1 iter_args(%xl = %x0) -> (tensor<2x128xf32>) {
      %w = graph.parameter_slice @layer.w[%l] : tensor<128x128xf32>
      %y = func.call @blk(%xl, %seed, %l, %offset, %w) : (tensor<2x128xf32>, i64, index, index, tensor<128x128xf32>) -> tensor<2x128xf32>
      scf.yield %y : tensor<2x128xf32>
    }
    %loss = func.call @head(%h, %count) : (tensor<2x128xf32>, tensor<f32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
