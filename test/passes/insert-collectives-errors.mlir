// RUN: ferry-opt %s --split-input-file --ferry-insert-collectives=replicas=2 --verify-diagnostics
// RUN: not ferry-opt %s --split-input-file --ferry-insert-collectives=replicas=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: ferry-insert-collectives: replicas must be at least 1, found 0

// Tests that a gradient the optimizer reads but no norm takes is refused:
// the pass would not know where it is complete.
module {
  graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
  graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
  graph.variable @adam_m.w : tensor<4xf32> init(zeros) hf "m.w"
  graph.variable @adam_v.w : tensor<4xf32> init(zeros) hf "v.w"
  func.func @train_step(%step: index {graph.input = "step"}) {
    %n = arith.constant dense<1.0> : tensor<f32>
    // expected-error @+1 {{reads @grad.w, whose norm no graph.global_norm takes: ferry-insert-collectives sums each gradient where its norm is taken, and cannot place this one}}
    graph.optimizer_update @w grad @grad.w moments @adam_m.w, @adam_v.w lr %n norm %n step %step {optimizer = "adamw", beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64, weight_decay = 0.0 : f64, clip_norm = 0.0 : f64} : tensor<f32>, tensor<f32>
    return
  }
}

// -----

// Tests that a gradient two norms read is refused: it would be summed twice.
module {
  graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
  func.func @train_step(%step: index {graph.input = "step"}) {
    %g = graph.parameter_ref @grad.w : tensor<4xf32>
    %n = graph.global_norm %g : tensor<4xf32> -> tensor<f32>
    %h = graph.parameter_ref @grad.w : tensor<4xf32>
    // expected-error @+1 {{reads @grad.w after another norm did: ferry-insert-collectives sums each gradient once, where its one norm is taken}}
    %m = graph.global_norm %h : tensor<4xf32> -> tensor<f32>
    return
  }
}
