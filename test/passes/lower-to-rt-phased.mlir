// RUN: ferry-opt %s --ferry-autodiff --ferry-insert-optimizer --ferry-batch-serialise --ferry-phased-execution --cse --canonicalize "--ferry-lower-to-rt=programs=train_step device-budget=300000" | FileCheck %s

// ferry-lower-to-rt with phases and a device budget (300000 bytes) that the
// stacked 2 x 128 x 128 weight, its gradient and its two moments (128 KiB
// each) do not fit together: they become remote buffers (`host`, offsets in
// host memory); states under 64 KiB stay on the device. Each phase stages
// what it touches:
// * layer forward: layer r's weights are loaded once before the micro-batch
//   loop (address: host base + 65536 * layer register), waited for, and the
//   GEMMs in the loop read the device copy; nothing is stored back;
// * layer optimizer: weight, gradient and both moments of layer r loaded,
//   updated in place on the device; the weight and moments stored back, not
//   the gradient (only read here: the layer's backward phase zeroes it
//   before accumulating, so that phase loads nothing of it); then waited
//   for.

// CHECK: rt.state @layer.w : tensor<2x128x128xf32> role "parameter" at 0 size 131072 {hf = "layer.{}.w", host,
// CHECK: rt.state @grad.layer.w : {{.*}} at 131072 size 131072 {hf = "grad.layer.{}.w", host,
// CHECK: rt.state @adam_m.emb : tensor<128xf32> role "optimizer_state" at {{[0-9]+}} size 512 {hf = "optimizer.m.emb", init
// CHECK: rt.state @adam_m.layer.w : {{.*}} at 262144 size 131072 {hf = "optimizer.m.layer.{}.w", host,
// CHECK: rt.state @adam_v.layer.w : {{.*}} at 393216 size 131072 {hf = "optimizer.v.layer.{}.w", host,
// CHECK: rt.program @train_step
// CHECK-SAME: rt.phase_names = ["embed.fwd", "blk.fwd", "head.fwd_bwd", "blk.bwd", "embed.bwd", "layer.optimizer"]
// CHECK-SAME: rt.phases = [{bytes_in = 0 : i64, bytes_out = 0 : i64, executions = 1 : i64, flops = 0.000000e+00 : f64, name = "embed.fwd"

// CHECK: rt.loop r 2 count 2 {
// CHECK-NEXT: rt.kernel "phase_begin" buffers [] ints [array<i64: 1>]
// CHECK-NEXT: rt.kernel "load" buffers [array<i64: 65536, 0, 0, 0, 65536>, array<i64: 65536, [[W:[0-9]+]]>] ints [array<i64: 65536>, array<i64: [[E:[0-9]+]]>]
// CHECK-NEXT: rt.kernel "wait" buffers [] ints [array<i64: [[E]]>]
// CHECK-NEXT: rt.loop r 3 count 2 {
// The layer's input (@stash.carry) kept for the backward (@stash.x).
// CHECK-NEXT: rt.kernel "copy"
// CHECK-NEXT: rt.kernel "gemm" buffers [{{.*}}, array<i64: 65536, [[W]]>, {{.*}}]
// CHECK-NOT: "store"
// CHECK: rt.kernel "phase_end" buffers [] ints [array<i64: 1>]

// The layer backward (layer 1 - r): the gradient's range is filled, not
// loaded, and stored at the end.
// CHECK: rt.kernel "phase_begin" buffers [] ints [array<i64: 3>]
// CHECK-NOT: rt.kernel "load" buffers [array<i64: 65536, 196608
// CHECK: rt.kernel "fill" buffers [array<i64: 65536, [[BG:[0-9]+]]>]
// CHECK: rt.kernel "store" buffers [array<i64: 65536, [[BG]]>, array<i64: 65536, 196608, {{.*}}, -65536>]
// CHECK: rt.kernel "phase_end" buffers [] ints [array<i64: 3>]

// CHECK: rt.kernel "phase_begin" buffers [] ints [array<i64: 5>]
// CHECK-NEXT: rt.kernel "load" buffers [array<i64: 65536, 0, {{.*}}, 65536>, array<i64: 65536, [[PW:[0-9]+]]>]
// CHECK-NEXT: rt.kernel "load" buffers [array<i64: 65536, 131072, {{.*}}, 65536>, array<i64: 65536, [[PG:[0-9]+]]>]
// CHECK-NEXT: rt.kernel "load" buffers [array<i64: 65536, 262144, {{.*}}, 65536>, array<i64: 65536, [[PM:[0-9]+]]>]
// CHECK-NEXT: rt.kernel "load" buffers [array<i64: 65536, 393216, {{.*}}, 65536>, array<i64: 65536, [[PV:[0-9]+]]>]
// CHECK-NEXT: rt.kernel "wait"
// CHECK-NEXT: rt.kernel "optimizer_update" buffers [array<i64: 65536, [[PW]]>, array<i64: 65536, [[PG]]>, array<i64: 65536, [[PM]]>, array<i64: 65536, [[PV]]>,
// CHECK: rt.kernel "store" buffers [array<i64: 65536, [[PW]]>, array<i64: 65536, 0,
// CHECK-NEXT: rt.kernel "store" buffers [array<i64: 65536, [[PM]]>, array<i64: 65536, 262144,
// CHECK-NEXT: rt.kernel "store" buffers [array<i64: 65536, [[PV]]>, array<i64: 65536, 393216,
// CHECK-NEXT: rt.kernel "wait"
// CHECK-NEXT: rt.kernel "phase_end" buffers [] ints [array<i64: 5>]


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
