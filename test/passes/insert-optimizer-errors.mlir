// RUN: ferry-opt %s --split-input-file --ferry-insert-optimizer -verify-diagnostics

// Tests every diagnostic of ferry-insert-optimizer
// (passes/InsertOptimizer.cpp). @forward_grad and the @grad.* variables are
// written by hand, as ferry-autodiff would leave them.

// Tests that the module needs the graph.training settings.
// expected-error @+1 {{ferry-insert-optimizer needs the module attribute graph.training (written by the builder)}}
module {
  graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
  graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that autodiff must have run: @forward alone is not enough.
// expected-error @+1 {{ferry-insert-optimizer needs a function marked graph.entry = "forward_grad": run ferry-autodiff first}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that the global batch splits into micro-batches on every replica:
// 8 is not divisible by 2 x 3.
// expected-error @+1 {{global_batch_size 8 is not divisible by micro_batch_size 2 x data_parallel 3}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 3 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that a micro-batch of 0 is rejected rather than divided by.
// expected-error @+1 {{global_batch_size 8 is not divisible by micro_batch_size 0 x data_parallel 1}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 0 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that a missing setting is named (lr is absent).
// expected-error @+1 {{graph.training.lr must be a float (the builder writes it from the config)}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that a setting of the wrong kind is named (a float micro-batch size);
// only the first bad setting is reported.
// expected-error @+1 {{graph.training.micro_batch_size must be an integer (the builder writes it from the config)}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = 3 : i64, micro_batch_size = 2.0 : f64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that a string setting must be a string.
// expected-error @+1 {{graph.training.optimizer must be a string (the builder writes it from the config)}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = 1 : i64, power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that every argument of @forward_grad is named, so @train_step can
// feed it.
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  // expected-error @+1 {{argument 1 has no graph.input name; @train_step cannot feed it}}
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}, %y: tensor<2x4xf32>) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that a non-tensor input must be seed or sample_offset.
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
  graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
  // expected-error @+1 {{input 'layer' is neither a tensor nor a known scalar (seed, sample_offset)}}
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}, %l: index {graph.input = "layer"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that every parameter has a gradient variable.
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
  // expected-error @+1 {{has no gradient variable @grad.frozen: the loss does not depend on it}}
  graph.parameter @frozen : tensor<4xf32> init(zeros) hf "frozen"
  graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Tests that the pass runs once: a function is already marked train_step.
// expected-error @+1 {{ferry-insert-optimizer runs once: @step is already marked graph.entry = "train_step"}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 8 : i64, lr = 1.000000e-03 : f64, lr_schedule = "poly", micro_batch_size = 2 : i64, optimizer = "lamb", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @w : tensor<4xf32> init(zeros) hf "w"
  graph.variable @grad.w : tensor<4xf32> init(zeros) hf "grad.w"
  func.func @forward_grad(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
  func.func @step(%s: index) attributes {graph.entry = "train_step"} {
    return
  }
}
