// RUN: ferry-opt %s --ferry-insert-collectives="replicas=2 rts=true rts-min-elements=8" | FileCheck %s

// Tests that in phased execution a sharded stacked parameter's whole
// gradient, zeroed, accumulated and reduce-scattered by one phase (its
// layer's backward), becomes one layer's scratch reused by every layer
// instead of every layer's whole gradient on every replica; the gather's
// layer index, computed inside the micro-batch loop, is hoisted with it.
// CHECK: graph.variable @grad.shard.layer.w : tensor<2x5xf32> init(zeros) hf "grad.shard.w.{}" stacked
// CHECK: graph.variable @grad.layer.w : tensor<10xf32> init(zeros) hf "grad.w.scratch"{{$}}
// CHECK-LABEL: func.func @train_step
// CHECK: scf.for %[[K:.*]] =
// CHECK-NEXT: graph.phase "layer.bwd" {
// CHECK-NEXT: %[[L0:.*]] = arith.subi %{{.*}}, %[[K]] : index
// CHECK-NEXT: graph.store %{{.*}} into @grad.layer.w : tensor<10xf32>
// CHECK-NEXT: %[[L:.*]] = arith.subi %{{.*}}, %[[K]] : index
// CHECK-NEXT: %[[S:.*]] = graph.parameter_slice @layer.w[%[[L]]] : tensor<5xf32>
// CHECK-NEXT: %[[W:.*]] = graph.all_gather %[[S]] replicas 2 : tensor<5xf32> -> tensor<10xf32>
// CHECK-NEXT: scf.for
// CHECK-NOT: graph.all_gather
// CHECK: graph.accumulate %{{.*}} into @grad.layer.w : tensor<10xf32>
// CHECK: } {graph.micro_batches}
// CHECK: %[[G:.*]] = graph.parameter_ref @grad.layer.w : tensor<10xf32>
// CHECK-NEXT: %[[GS:.*]] = graph.reduce_scatter %[[G]] replicas 2 : tensor<10xf32> -> tensor<5xf32>
// CHECK-NEXT: graph.store %[[GS]] into @grad.shard.layer.w[%[[L0]]] : tensor<5xf32>
// CHECK: graph.optimizer_update @layer.w[%{{.*}}] grad @grad.shard.layer.w
module {
  graph.parameter @layer.w : tensor<2x10xf32> init(zeros) hf "w.{}" stacked
  graph.variable @grad.layer.w : tensor<2x10xf32> init(zeros) hf "grad.w.{}" stacked
  graph.variable @adam_m.layer.w : tensor<2x10xf32> init(zeros) hf "m.w.{}" stacked
  graph.variable @adam_v.layer.w : tensor<2x10xf32> init(zeros) hf "v.w.{}" stacked
  graph.variable @norm.parts : tensor<2xf32> init(zeros) hf "norm.parts.{}" stacked
  func.func @train_step(%step: index {graph.input = "step"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant dense<0.0> : tensor<10xf32>
    scf.for %k = %c0 to %c2 step %c1 {
      graph.phase "layer.bwd" {
        %l0 = arith.subi %c1, %k : index
        graph.store %zero into @grad.layer.w[%l0] : tensor<10xf32>
        scf.for %mb = %c0 to %c2 step %c1 {
          %l = arith.subi %c1, %k : index
          %x = graph.parameter_slice @layer.w[%l] : tensor<10xf32>
          %y = graph.add %x, %x : tensor<10xf32>
          graph.accumulate %y into @grad.layer.w[%l] : tensor<10xf32>
        } {graph.micro_batches}
        %g = graph.parameter_slice @grad.layer.w[%l0] : tensor<10xf32>
        %n = graph.global_norm %g : tensor<10xf32> -> tensor<f32>
        graph.store %n into @norm.parts[%l0] : tensor<f32>
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
