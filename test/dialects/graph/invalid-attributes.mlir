// RUN: ferry-opt %s --split-input-file --verify-diagnostics

// The graph stage's attributes (dialects/graph/GraphAttributes.h) are checked
// by the dialect's verifier, wherever the IR comes from. First, every one of
// them where it belongs: this verifies.
module attributes {graph.model = "bert", graph.vocab_size = 30 : i64, graph.padded_vocab_size = 32 : i64, graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 4 : i64, lr = 1.000000e-03 : f64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @w : tensor<32x4xf32> init(normal, 2.000000e-02) hf "w" {graph.init_rows = 30 : i64}
  graph.variable @m : tensor<16x4xf32> init(zeros) hf "m" {graph.shard_of = array<i64: 32, 4>, graph.shard_replicas = 2 : i64}
  func.func @f(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @forward(%x: tensor<f32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) attributes {graph.entry = "forward"} {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c2 step %c1 {
      %y = func.call @f(%x) {graph.recompute} : (tensor<f32>) -> tensor<f32>
    } {graph.micro_batches}
    return %x : tensor<f32>
  }
}

// -----

// A training setting of the wrong kind.
// expected-error @+1 {{graph.training.lr must be a float (the builder writes it from the config)}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 4 : i64, lr = 1 : i64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
}

// -----

// A training setting missing.
// expected-error @+1 {{graph.training.seed must be an integer (the builder writes it from the config)}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 4 : i64, lr = 1.000000e-03 : f64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
}

// -----

// expected-error @+1 {{graph.training has an unknown key 'momentum'}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 4 : i64, lr = 1.000000e-03 : f64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64, momentum = 0.5 : f64}} {
}

// -----

// expected-error @+1 {{graph.training must be a dictionary on the module}}
module attributes {graph.training = 3 : i64} {
}

// -----

module {
  // expected-error @+1 {{graph.entry 'step' is not one of forward, forward_grad, forward_eval, train_step, eval_step}}
  func.func @step() attributes {graph.entry = "step"} {
    return
  }
}

// -----

// Two functions marked for one part: each is told of the other.
module {
  // expected-error @+1 {{graph.entry 'train_step' is also on @b; each part is played by one function}}
  func.func @a() attributes {graph.entry = "train_step"} {
    return
  }
  // expected-error @+1 {{graph.entry 'train_step' is also on @a; each part is played by one function}}
  func.func @b() attributes {graph.entry = "train_step"} {
    return
  }
}

// -----

// expected-error @+1 {{graph.entry must be a string on a func.func}}
module attributes {graph.entry = "forward"} {
}

// -----

module {
  // expected-error @+1 {{graph.input must be a non-empty string naming the program input, on a func.func}}
  func.func @f(%x: tensor<f32> {graph.input = 1 : i64}) {
    return
  }
}

// -----

module {
  // expected-error @+1 {{graph.output must be a non-empty string naming the program output, on a func.func}}
  func.func @f(%x: tensor<f32>) -> (tensor<f32> {graph.output = ""}) {
    return %x : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{unknown argument attribute graph.inptu}}
  func.func @f(%x: tensor<f32> {graph.inptu = "x"}) {
    return
  }
}

// -----

module {
  // expected-error @+1 {{unknown result attribute graph.outptu}}
  func.func @f(%x: tensor<f32>) -> (tensor<f32> {graph.outptu = "y"}) {
    return %x : tensor<f32>
  }
}

// -----

// expected-error @+1 {{unknown attribute graph.micro_batch (the graph stage's attributes are listed in dialects/graph/GraphAttributes.h)}}
module attributes {graph.micro_batch} {
}

// -----

func.func @f(%x: index) {
  // expected-error @+1 {{graph.micro_batches must be a unit attribute on an scf.for}}
  %c0 = arith.constant {graph.micro_batches} 0 : index
  return
}

// -----

func.func @g(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
func.func @f(%x: tensor<f32>) {
  // expected-error @+1 {{graph.recompute must be a unit attribute on a func.call}}
  %y = func.call @g(%x) {graph.recompute = 1 : i64} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

// expected-error @+1 {{graph.init_rows must be a positive integer on a graph.parameter or graph.variable}}
graph.parameter @w : tensor<32x4xf32> init(normal, 2.000000e-02) hf "w" {graph.init_rows = 0 : i64}

// -----

// expected-error @+1 {{graph.vocab_size must be a positive integer on the module}}
module attributes {graph.vocab_size = "30"} {
}

// -----

// expected-error @+1 {{graph.shard_of and graph.shard_replicas come together}}
graph.variable @m : tensor<16x4xf32> init(zeros) hf "m" {graph.shard_of = array<i64: 32, 4>}

// -----

// expected-error @+1 {{graph.shard_replicas must be an integer of at least 2 on a graph.parameter or graph.variable}}
graph.variable @m : tensor<16x4xf32> init(zeros) hf "m" {graph.shard_of = array<i64: 32, 4>, graph.shard_replicas = 1 : i64}

// -----

// expected-error @+1 {{graph.shard_of must be an array of i64 (the whole shape) on a graph.parameter or graph.variable}}
graph.variable @m : tensor<16x4xf32> init(zeros) hf "m" {graph.shard_of = [32, 4], graph.shard_replicas = 2 : i64}

// -----

// expected-error @+1 {{graph.model must be a string on the module}}
module attributes {graph.model = 1 : i64} {
}

// -----

// Integers are signless and at most 64 bits: what the passes read.
// expected-error @+1 {{graph.training.seed must be an integer (the builder writes it from the config)}}
module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 4 : i64, lr = 1.000000e-03 : f64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : ui64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
}

// -----

// expected-error @+1 {{graph.vocab_size must be a positive integer on the module}}
module attributes {graph.vocab_size = 30 : i128} {
}
