// RUN: ferry-opt %s --ferry-insert-collectives="replicas=2 rts=true rts-min-elements=8" | FileCheck %s

// Tests replicated tensor sharding of a tensor-parallel part: @layer.w is
// this rank's part [2, 3, 4] of a stacked weight split along its dimension
// 2. It is sharded over the 2 replicas like any parameter (entries of 12,
// shard 6): `graph.shard_of` holds the part's shape, against which the
// split is verified (dimension 2 of the part, not of the shard [2, 6]). Its
// whole gradient, one layer's scratch in phased execution, drops the layer
// dimension, so its split moves to dimension 1; reads gather the shard to
// the part, the gradient is reduce-scattered over the replicas (the tensor
// group's sums are ferry-complete-split-norms', before this pass).
// CHECK-DAG: graph.parameter @layer.w : tensor<2x6xf32> init(normal, 2.000000e-02) hf "w.{}" stacked sharding <split = 2> {graph.shard_of = array<i64: 2, 3, 4>, graph.shard_replicas = 2 : i64}
// CHECK-DAG: graph.variable @grad.shard.layer.w : tensor<2x6xf32> init(zeros) hf "grad.shard.w.{}" stacked{{$}}
// CHECK-DAG: graph.variable @grad.layer.w : tensor<3x4xf32> init(zeros) hf "grad.w.scratch" sharding <split = 1>{{$}}
// CHECK-DAG: graph.variable @adam_m.layer.w : tensor<2x6xf32> init(zeros) hf "m.w.{}" stacked sharding <split = 2> {graph.shard_of = array<i64: 2, 3, 4>, graph.shard_replicas = 2 : i64}
// CHECK-LABEL: func.func @train_step
// CHECK: %[[S:.*]] = graph.parameter_slice @layer.w[%{{.*}}] : tensor<6xf32>
// CHECK-NEXT: graph.all_gather %[[S]] replicas 2 : tensor<6xf32> -> tensor<3x4xf32>
// CHECK: %[[G:.*]] = graph.parameter_ref @grad.layer.w : tensor<3x4xf32>
// CHECK-NEXT: %[[GS:.*]] = graph.reduce_scatter %[[G]] replicas 2 : tensor<3x4xf32> -> tensor<6xf32>
// CHECK-NEXT: graph.store %[[GS]] into @grad.shard.layer.w[%{{.*}}] : tensor<6xf32>
// CHECK: graph.optimizer_update @layer.w[%{{.*}}] grad @grad.shard.layer.w {{.*}}shard_replicas = 2
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 2, partitioned = true>} {
  graph.parameter @layer.w : tensor<2x3x4xf32> init(normal, 2.000000e-02) hf "w.{}" stacked sharding <split = 2>
  graph.variable @grad.layer.w : tensor<2x3x4xf32> init(zeros) hf "grad.w.{}" stacked sharding <split = 2>
  graph.variable @adam_m.layer.w : tensor<2x3x4xf32> init(zeros) hf "m.w.{}" stacked sharding <split = 2>
  graph.variable @adam_v.layer.w : tensor<2x3x4xf32> init(zeros) hf "v.w.{}" stacked sharding <split = 2>
  graph.variable @norm.parts : tensor<2xf32> init(zeros) hf "norm.parts.{}" stacked
  func.func @train_step(%step: index {graph.input = "step"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant dense<0.0> : tensor<3x4xf32>
    scf.for %k = %c0 to %c2 step %c1 {
      graph.phase "layer.bwd" {
        %l = arith.subi %c1, %k : index
        graph.store %zero into @grad.layer.w[%l] : tensor<3x4xf32>
        %x = graph.parameter_slice @layer.w[%l] : tensor<3x4xf32>
        %y = graph.add %x, %x : tensor<3x4xf32>
        graph.accumulate %y into @grad.layer.w[%l] : tensor<3x4xf32>
        %g = graph.parameter_slice @grad.layer.w[%l] : tensor<3x4xf32>
        %n = graph.global_norm %g : tensor<3x4xf32> -> tensor<f32>
        graph.store %n into @norm.parts[%l] : tensor<f32>
      }
    }
    %parts = graph.parameter_ref @norm.parts : tensor<2xf32>
    %all = graph.global_norm %parts : tensor<2xf32> -> tensor<f32>
    scf.for %l = %c0 to %c2 step %c1 {
      graph.phase "layer.optimizer" {
        graph.optimizer_update @layer.w[%l] grad @grad.layer.w moments @adam_m.layer.w, @adam_v.layer.w lr %all norm %all step %step {optimizer = "adamw", beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64, weight_decay = 0.0 : f64, clip_norm = 0.0 : f64} : tensor<f32>, tensor<f32>
      }
    }
    return
  }
}
