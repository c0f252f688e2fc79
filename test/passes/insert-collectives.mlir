// RUN: ferry-opt %s --split-input-file --ferry-insert-collectives=replicas=2 | FileCheck %s
// RUN: ferry-opt %s --split-input-file --ferry-insert-collectives=replicas=1 | FileCheck %s --check-prefix=ONE

// Tests that a resident step sums each gradient in place where the global
// norm reads it (the norm and the optimizer read the sum), and its metrics
// at the end; the tied gradient, added into another, is not summed itself.
// CHECK-LABEL: module @resident
// CHECK: func.func @train_step
// CHECK: graph.accumulate %{{.*}} into @metric.loss
// CHECK: %[[W:.*]] = graph.parameter_ref @grad.w : tensor<4x8xf32>
// CHECK-NEXT: %[[WS:.*]] = graph.all_reduce %[[W]] replicas 2 : tensor<4x8xf32>
// CHECK-NEXT: graph.store %[[WS]] into @grad.w : tensor<4x8xf32>
// CHECK: %[[B:.*]] = graph.parameter_ref @grad.b : tensor<8xf32>
// CHECK-NEXT: %[[BS:.*]] = graph.all_reduce %[[B]] replicas 2 : tensor<8xf32>
// CHECK-NEXT: graph.store %[[BS]] into @grad.b : tensor<8xf32>
// CHECK: %[[W2:.*]] = graph.parameter_ref @grad.w : tensor<4x8xf32>
// CHECK: %[[B2:.*]] = graph.parameter_ref @grad.b : tensor<8xf32>
// CHECK: graph.global_norm %[[W2]], %[[B2]]
// CHECK-NOT: @grad.tied.w
// CHECK: graph.optimizer_update @w
// CHECK: %[[L:.*]] = graph.parameter_ref @metric.loss : tensor<f32>
// CHECK-NEXT: %[[LS:.*]] = graph.all_reduce %[[L]] replicas 2 : tensor<f32>
// CHECK-NEXT: graph.store %[[LS]] into @metric.loss : tensor<f32>
// CHECK-NEXT: return
// ONE-LABEL: module @resident
// ONE-NOT: graph.all_reduce
module @resident {
  graph.parameter @w : tensor<4x8xf32> init(normal, 2.000000e-02) hf "w"
  graph.parameter @b : tensor<8xf32> init(zeros) hf "b"
  graph.variable @grad.w : tensor<4x8xf32> init(zeros) hf "grad.w"
  graph.variable @grad.tied.w : tensor<4x8xf32> init(zeros) hf "grad.tied.w"
  graph.variable @grad.b : tensor<8xf32> init(zeros) hf "grad.b"
  graph.variable @adam_m.w : tensor<4x8xf32> init(zeros) hf "m.w"
  graph.variable @adam_v.w : tensor<4x8xf32> init(zeros) hf "v.w"
  graph.variable @metric.loss : tensor<f32> init(zeros) hf "metric.loss"
  func.func @train_step(%step: index {graph.input = "step"}, %replica: index {graph.input = "replica"}) {
    %loss = arith.constant dense<1.0> : tensor<f32>
    graph.accumulate %loss into @metric.loss : tensor<f32>
    %t = graph.parameter_ref @grad.tied.w : tensor<4x8xf32>
    graph.accumulate %t into @grad.w : tensor<4x8xf32>
    %w = graph.parameter_ref @grad.w : tensor<4x8xf32>
    %b = graph.parameter_ref @grad.b : tensor<8xf32>
    %n = graph.global_norm %w, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<f32>
    %lr = graph.learning_rate %step {kind = "constant", lr = 1.0e-03 : f64, warmup_steps = 0 : i64, start_warmup_step = 0 : i64, power = 1.0 : f64, total_steps = 10 : i64} : tensor<f32>
    graph.optimizer_update @w grad @grad.w moments @adam_m.w, @adam_v.w lr %lr norm %n step %step {optimizer = "lamb", beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64, weight_decay = 0.01 : f64, clip_norm = 1.0 : f64} : tensor<f32>, tensor<f32>
    return
  }
}

// -----

// Tests that a phased step sums a stacked gradient's layer entry in the
// phase that takes its part of the norm, at that layer.
// CHECK-LABEL: module @phased
// CHECK: graph.phase "layer.bwd"
// CHECK: %[[G:.*]] = graph.parameter_slice @grad.layer.w[%[[L:.*]]] : tensor<4xf32>
// CHECK-NEXT: %[[S:.*]] = graph.all_reduce %[[G]] replicas 2 : tensor<4xf32>
// CHECK-NEXT: graph.store %[[S]] into @grad.layer.w[%[[L]]] : tensor<4xf32>
// CHECK-NEXT: %[[G2:.*]] = graph.parameter_slice @grad.layer.w[%[[L]]] : tensor<4xf32>
// CHECK-NEXT: graph.global_norm %[[G2]] : tensor<4xf32> -> tensor<f32>
// CHECK-NOT: graph.all_reduce
// CHECK: return
module @phased {
  graph.parameter @layer.w : tensor<2x4xf32> init(zeros) hf "w.{}" stacked
  graph.variable @grad.layer.w : tensor<2x4xf32> init(zeros) hf "grad.w.{}" stacked
  graph.variable @norm.parts : tensor<2xf32> init(zeros) hf "norm.parts.{}" stacked
  func.func @train_step(%step: index {graph.input = "step"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    scf.for %l = %c0 to %c2 step %c1 {
      graph.phase "layer.bwd" {
        %g = graph.parameter_slice @grad.layer.w[%l] : tensor<4xf32>
        %n = graph.global_norm %g : tensor<4xf32> -> tensor<f32>
        graph.store %n into @norm.parts[%l] : tensor<f32>
      }
    }
    %parts = graph.parameter_ref @norm.parts : tensor<2xf32>
    %all = graph.global_norm %parts : tensor<2xf32> -> tensor<f32>
    return
  }
}
