// RUN: ferry-opt %s --split-input-file --ferry-batch-serialise -verify-diagnostics

// Every error of ferry-batch-serialise, one per case, on hand-written
// stand-ins for ferry-insert-optimizer's output.

// expected-error @+1 {{ferry-batch-serialise needs functions with bodies marked graph.entry = "train_step" and "forward_grad": run ferry-autodiff and ferry-insert-optimizer first}}
module {
}

// -----

module {
  func.func @forward_grad(%x: tensor<2xf32>) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %s = graph.reduce sum %x dims [0] : tensor<2xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
  // No micro-batch loop around the call.
  // expected-error @+1 {{ferry-batch-serialise: @train_step must call @forward_grad directly inside its micro-batch loop (from 0, step 1, to a constant)}}
  func.func @train_step(%step: index) attributes {graph.entry = "train_step"} {
    %cst = arith.constant dense<1.0> : tensor<2xf32>
    %l = func.call @forward_grad(%cst) : (tensor<2xf32>) -> tensor<f32>
    return
  }
}

// -----

module {
  func.func @forward_grad(%x: tensor<2xf32>) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %y = graph.add %x, %x : tensor<2xf32>
    // A layer loop carrying two values cannot be laid out as one row buffer.
    // expected-error @+1 {{ferry-batch-serialise: a layer loop must count from 0 with step 1 to a constant and carry one value}}
    %r:2 = scf.for %l = %c0 to %c2 step %c1 iter_args(%a = %y, %b = %y) -> (tensor<2xf32>, tensor<2xf32>) {
      scf.yield %b, %a : tensor<2xf32>, tensor<2xf32>
    }
    %s = graph.reduce sum %r#0 dims [0] : tensor<2xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
  func.func @train_step(%step: index) attributes {graph.entry = "train_step"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %cst = arith.constant dense<1.0> : tensor<2xf32>
    scf.for %i = %c0 to %c2 step %c1 {
      %l = func.call @forward_grad(%cst) : (tensor<2xf32>) -> tensor<f32>
    }
    return
  }
}

// -----

module {
  graph.variable @stash.s : tensor<2xf32> init(zeros) hf "stash.s"
  func.func @forward_grad(%x: tensor<2xf32>) -> tensor<f32> attributes {graph.entry = "forward_grad"} {
    %y = graph.add %x, %x : tensor<2xf32>
    graph.store %y into @stash.s : tensor<2xf32>
    %s = graph.reduce sum %y dims [0] : tensor<2xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
  func.func @train_step(%step: index) attributes {graph.entry = "train_step"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %cst = arith.constant dense<1.0> : tensor<2xf32>
    scf.for %i = %c0 to %c2 step %c1 {
      %l = func.call @forward_grad(%cst) : (tensor<2xf32>) -> tensor<f32>
    }
    // Per-micro-batch data read after the loop: only the last micro-batch's
    // would be there, and serialising would change which.
    // expected-error @+1 {{ferry-batch-serialise: @stash.s is written per micro-batch and read outside the micro-batch loop}}
    %s = graph.parameter_ref @stash.s : tensor<2xf32>
    return
  }
}
