// RUN: ferry-opt %s --ferry-insert-collectives="replicas=3 rts=true rts-min-elements=8" | FileCheck %s

// Tests replicated tensor sharding over 3 replicas: @w (32 elements, shard
// ceil(32 / 3) = 11) and @layer.w (entries of 10, shard 4) become shards,
// with their moments; @b (4 elements) stays replicated. Reads gather the
// shard, hoisted out of the micro-batch loop but not out of the layer loop;
// gradients are reduce-scattered where their norm is taken, the norm from
// the replicas' shard norms; the optimizer updates the shards.
// CHECK-DAG: graph.parameter @w : tensor<11xf32> init(normal, 2.000000e-02) hf "w" {graph.shard_of = array<i64: 4, 8>, graph.shard_replicas = 3 : i64}
// CHECK-DAG: graph.parameter @layer.w : tensor<2x4xf32> init(zeros) hf "w.{}" stacked {graph.shard_of = array<i64: 2, 10>, graph.shard_replicas = 3 : i64}
// CHECK-DAG: graph.parameter @b : tensor<4xf32> init(zeros) hf "b"{{$}}
// CHECK-DAG: graph.variable @adam_m.w : tensor<11xf32> init(zeros) hf "m.w" {graph.shard_of = array<i64: 4, 8>, graph.shard_replicas = 3 : i64}
// CHECK-DAG: graph.variable @adam_v.w : tensor<11xf32> init(zeros) hf "v.w" {graph.shard_of = array<i64: 4, 8>, graph.shard_replicas = 3 : i64}
// CHECK-DAG: graph.variable @grad.shard.w : tensor<11xf32> init(zeros) hf "grad.shard.w"
// CHECK-LABEL: func.func @train_step
// CHECK: scf.for %[[L:.*]] =
// CHECK: %[[S:.*]] = graph.parameter_slice @layer.w[%[[L]]] : tensor<4xf32>
// CHECK-NEXT: %[[W:.*]] = graph.all_gather %[[S]] replicas 3 : tensor<4xf32> -> tensor<10xf32>
// CHECK-NEXT: scf.for
// CHECK: graph.add %[[W]], %[[W]]
// CHECK: } {graph.micro_batches}
// CHECK: %[[G:.*]] = graph.parameter_ref @grad.w : tensor<4x8xf32>
// CHECK-NEXT: %[[GS:.*]] = graph.reduce_scatter %[[G]] replicas 3 : tensor<4x8xf32> -> tensor<11xf32>
// CHECK-NEXT: graph.store %[[GS]] into @grad.shard.w : tensor<11xf32>
// CHECK-NEXT: %[[P:.*]] = graph.global_norm %[[GS]] : tensor<11xf32> -> tensor<f32>
// CHECK-NEXT: %[[P1:.*]] = graph.reshape %[[P]] : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT: %[[PS:.*]] = graph.all_gather %[[P1]] replicas 3 : tensor<1xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[N:.*]] = graph.global_norm %[[PS]] : tensor<3xf32> -> tensor<f32>
// CHECK: %[[B:.*]] = graph.parameter_ref @grad.b : tensor<4xf32>
// CHECK-NEXT: graph.all_reduce %[[B]] replicas 3 : tensor<4xf32>
// CHECK: graph.global_norm %[[N]], %{{.*}} : tensor<f32>, tensor<4xf32> -> tensor<f32>
// CHECK: graph.optimizer_update @w grad @grad.shard.w moments @adam_m.w, @adam_v.w {{.*}}shard_replicas = 3 : i64
// CHECK: graph.optimizer_update @b grad @grad.b moments @adam_m.b, @adam_v.b
// CHECK-NOT: shard_replicas
// CHECK: return
module {
  graph.parameter @w : tensor<4x8xf32> init(normal, 2.000000e-02) hf "w"
  graph.parameter @layer.w : tensor<2x10xf32> init(zeros) hf "w.{}" stacked
  graph.parameter @b : tensor<4xf32> init(zeros) hf "b"
  graph.variable @grad.w : tensor<4x8xf32> init(zeros) hf "grad.w"
  graph.variable @grad.b : tensor<4xf32> init(zeros) hf "grad.b"
  graph.variable @adam_m.w : tensor<4x8xf32> init(zeros) hf "m.w"
  graph.variable @adam_v.w : tensor<4x8xf32> init(zeros) hf "v.w"
  graph.variable @adam_m.b : tensor<4xf32> init(zeros) hf "m.b"
  graph.variable @adam_v.b : tensor<4xf32> init(zeros) hf "v.b"
  graph.variable @out : tensor<10xf32> init(zeros) hf "out"
  func.func @train_step(%step: index {graph.input = "step"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    scf.for %l = %c0 to %c2 step %c1 {
      scf.for %mb = %c0 to %c2 step %c1 {
        %x = graph.parameter_slice @layer.w[%l] : tensor<10xf32>
        %y = graph.add %x, %x : tensor<10xf32>
        graph.accumulate %y into @out : tensor<10xf32>
      } {graph.micro_batches}
    }
    %w = graph.parameter_ref @grad.w : tensor<4x8xf32>
    %b = graph.parameter_ref @grad.b : tensor<4xf32>
    %n = graph.global_norm %w, %b : tensor<4x8xf32>, tensor<4xf32> -> tensor<f32>
    %lr = graph.learning_rate %step {kind = "constant", lr = 1.0e-03 : f64, warmup_steps = 0 : i64, start_warmup_step = 0 : i64, power = 1.0 : f64, total_steps = 10 : i64} : tensor<f32>
    graph.optimizer_update @w grad @grad.w moments @adam_m.w, @adam_v.w lr %lr norm %n step %step {optimizer = "lamb", beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64, weight_decay = 0.01 : f64, clip_norm = 1.0 : f64} : tensor<f32>, tensor<f32>
    graph.optimizer_update @b grad @grad.b moments @adam_m.b, @adam_v.b lr %lr norm %n step %step {optimizer = "lamb", beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64, weight_decay = 0.0 : f64, clip_norm = 1.0 : f64} : tensor<f32>, tensor<f32>
    return
  }
}
