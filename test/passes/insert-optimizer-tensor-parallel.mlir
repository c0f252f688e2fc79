// RUN: ferry-opt %s --ferry-insert-optimizer | FileCheck %s

// Tests ferry-insert-optimizer on a partitioned module (T = 2): a split
// parameter's Adam moments are split alike (the runtime initialises and
// checkpoints them as parts of whole tensors); a replicated one's are not.
// CHECK-DAG: graph.variable @adam_m.w : tensor<2x4xf32> init(zeros) hf "optimizer.m.w" sharding <split = 0>
// CHECK-DAG: graph.variable @adam_v.w : tensor<2x4xf32> init(zeros) hf "optimizer.v.w" sharding <split = 0>
// CHECK-DAG: graph.variable @adam_m.b : tensor<4xf32> init(zeros) hf "optimizer.m.b"{{$}}
// CHECK-DAG: graph.variable @adam_v.b : tensor<4xf32> init(zeros) hf "optimizer.v.b"{{$}}
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1, partitioned = true>, graph.training = {beta1 = 8.000000e-01 : f64, beta2 = 9.000000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-08 : f64, global_batch_size = 4 : i64, lr = 5.000000e-04 : f64, lr_schedule = "constant", micro_batch_size = 4 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 7 : i64, start_warmup_step = 0 : i64, total_steps = 7 : i64, warmup_steps = 0 : i64, weight_decay = 5.000000e-02 : f64}} {
  graph.parameter @w : tensor<2x4xf32> init(normal, 2.000000e-02) hf "w" sharding <split = 0>
  graph.parameter @b : tensor<4xf32> init(zeros) hf "b"
  graph.variable @grad.w : tensor<2x4xf32> init(zeros) hf "grad.w" sharding <split = 0>
  graph.variable @grad.b : tensor<4xf32> init(zeros) hf "grad.b"
  func.func @forward(%arg0: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %0 = graph.parameter_ref @w : tensor<2x4xf32>
    %1 = graph.add %arg0, %0 : tensor<2x4xf32>
    %2 = graph.reduce sum_squares %1 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %2 : tensor<f32>
  }
  func.func @forward_grad(%arg0: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %0 = graph.parameter_ref @w : tensor<2x4xf32>
    %1 = graph.add %arg0, %0 : tensor<2x4xf32>
    %2 = graph.reduce sum_squares %1 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %3 = graph.scale %1 by 2.000000e+00 : tensor<2x4xf32>
    graph.accumulate %3 into @grad.w : tensor<2x4xf32>
    %4 = graph.reduce sum %3 dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    graph.accumulate %4 into @grad.b : tensor<4xf32>
    return %2 : tensor<f32>
  }
}
