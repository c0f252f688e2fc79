// RUN: ferry-opt %s --split-input-file --ferry-phased-execution -verify-diagnostics

// Every error of ferry-phased-execution, one per case.

// expected-error @+1 {{ferry-phased-execution needs a function with a body marked graph.entry = "train_step": run ferry-insert-optimizer and ferry-batch-serialise first}}
module {
}

// -----

module {
  // No micro-batch loops: ferry-batch-serialise did not run.
  // expected-error @+1 {{ferry-phased-execution: no micro-batch loops to cut into phases; run ferry-batch-serialise first}}
  func.func @train_step(%step: index) attributes {graph.entry = "train_step"} {
    return
  }
}

// -----

module {
  graph.variable @grad.w : tensor<2xf32> init(zeros) hf "grad.w"
  // Phases but no global norm after them.
  // expected-error @+1 {{ferry-phased-execution: @train_step has no global norm after its phases; run ferry-insert-optimizer first}}
  func.func @train_step(%step: index) attributes {graph.entry = "train_step"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %g = arith.constant dense<1.0> : tensor<2xf32>
    scf.for %i = %c0 to %c2 step %c1 {
      graph.accumulate %g into @grad.w : tensor<2xf32>
    } {graph.micro_batches}
    return
  }
}

// -----

module {
  graph.variable @grad.w : tensor<3x2xf32> init(zeros) hf "grad.{}.w" stacked
  // A stacked gradient accumulated in two phases cannot be a tied weight.
  // expected-error @+1 {{ferry-phased-execution: @grad.w is accumulated in several phases; only unstacked gradients (a tied embedding) may be}}
  func.func @train_step(%step: index) attributes {graph.entry = "train_step"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %g = arith.constant dense<1.0> : tensor<2xf32>
    scf.for %i = %c0 to %c2 step %c1 {
      graph.accumulate %g into @grad.w[%i] : tensor<2xf32>
    } {graph.micro_batches}
    scf.for %i = %c0 to %c2 step %c1 {
      graph.accumulate %g into @grad.w[%i] : tensor<2xf32>
    } {graph.micro_batches}
    return
  }
}
