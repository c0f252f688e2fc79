// RUN: ferry-opt %s --split-input-file --ferry-insert-eval -verify-diagnostics

// Every error of ferry-insert-eval, one per case.

// expected-error @+1 {{ferry-insert-eval needs a function with a body marked graph.entry = "forward"}}
module {
}

// -----

// @train_step's stacked inputs are missing: ferry-insert-optimizer did not run.
// expected-error @+1 {{ferry-insert-eval needs @input.x, the stacked input of @train_step: run ferry-insert-optimizer first}}
module {
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  // expected-error @+1 {{returns 6 results; ferry-insert-eval sums 1 to 5 of them}}
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) attributes {graph.entry = "forward"} {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s, %s, %s, %s, %s, %s : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
  }
}

// -----

module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  // expected-error @+1 {{returns 'tensor<2x4xf32>'; ferry-insert-eval sums f32 scalar results}}
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<2x4xf32> attributes {graph.entry = "forward"} {
    return %x : tensor<2x4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{argument 0 has no graph.input name; @eval_step cannot feed it}}
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<f32> attributes {graph.entry = "forward"} {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  // expected-error @+1 {{input 'step' is neither a tensor nor a known scalar (seed, sample_offset)}}
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %n: index {graph.input = "step"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// expected-error @+1 {{ferry-insert-eval needs @input.mlm_count, the input of @train_step: run ferry-insert-optimizer first}}
module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}, %c: tensor<f32> {graph.input = "mlm_count"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// expected-error @+1 {{@eval_step already exists; ferry-insert-eval runs once}}
module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
  func.func @eval_step() attributes {graph.entry = "eval_step"} {
    return
  }
}

// -----

// Results named with graph.output: every one, or none.
module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  // expected-error @+1 {{names result 0 with graph.output but not result 1; name every result or none}}
  func.func @forward(%x: tensor<2x4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}, tensor<f32>) attributes {graph.entry = "forward"} {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s, %s : tensor<f32>, tensor<f32>
  }
}
