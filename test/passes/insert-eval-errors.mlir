// RUN: ferry-opt %s --split-input-file --ferry-insert-eval -verify-diagnostics

// Every error of ferry-insert-eval, one per case.

// expected-error @+1 {{ferry-insert-eval needs @forward with a body}}
module {
}

// -----

// @train_step's stacked inputs are missing: ferry-insert-optimizer did not run.
// expected-error @+1 {{ferry-insert-eval needs @input.x, the stacked input of @train_step: run ferry-insert-optimizer first}}
module {
  func.func @forward(%x: tensor<2x4xf32> {ferry.input = "x"}) -> tensor<f32> {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  // expected-error @+1 {{returns 6 results; ferry-insert-eval sums 1 to 5 of them}}
  func.func @forward(%x: tensor<2x4xf32> {ferry.input = "x"}) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s, %s, %s, %s, %s, %s : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
  }
}

// -----

module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  // expected-error @+1 {{returns 'tensor<2x4xf32>'; ferry-insert-eval sums f32 scalar results}}
  func.func @forward(%x: tensor<2x4xf32> {ferry.input = "x"}) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{argument 0 has no ferry.input name; @eval_step cannot feed it}}
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<f32> {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  // expected-error @+1 {{input 'step' is neither a tensor nor a known scalar (seed, sample_offset)}}
  func.func @forward(%x: tensor<2x4xf32> {ferry.input = "x"}, %n: index {ferry.input = "step"}) -> tensor<f32> {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// expected-error @+1 {{ferry-insert-eval needs @input.mlm_count, the input of @train_step: run ferry-insert-optimizer first}}
module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  func.func @forward(%x: tensor<2x4xf32> {ferry.input = "x"}, %c: tensor<f32> {ferry.input = "mlm_count"}) -> tensor<f32> {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// expected-error @+1 {{@eval_step already exists; ferry-insert-eval runs once}}
module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  func.func @forward(%x: tensor<2x4xf32> {ferry.input = "x"}) -> tensor<f32> {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
  func.func @eval_step() {
    return
  }
}

// -----

// Results named with ferry.output: every one, or none.
module {
  graph.variable @input.x : tensor<4x2x4xf32> init(zeros) hf "input.x.{}" stacked
  // expected-error @+1 {{names result 0 with ferry.output but not result 1; name every result or none}}
  func.func @forward(%x: tensor<2x4xf32> {ferry.input = "x"}) -> (tensor<f32> {ferry.output = "loss"}, tensor<f32>) {
    %s = graph.reduce sum_squares %x dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s, %s : tensor<f32>, tensor<f32>
  }
}
