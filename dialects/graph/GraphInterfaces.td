//===- GraphInterfaces.td - interfaces of the `graph` dialect -*- tablegen -*-===//
//
// GradientOpInterface: how each differentiable op states its gradient. The
// autodiff pass (passes/Autodiff.cpp) walks a function backwards and asks each
// op for the gradients of its operands given the gradients of its results.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_GRAPH_GRAPHINTERFACES_TD
#define FERRY_DIALECTS_GRAPH_GRAPHINTERFACES_TD

include "mlir/IR/OpBase.td"

def Graph_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::ferry::graph";
  let description = [{
    An op that can be differentiated in reverse mode. `buildGradients` is
    called with the builder placed where the backward code goes and one
    gradient per result (never null: the pass passes only ops with a result
    gradient, and single-result ops are the rule). It fills `operandGrads`
    (sized to the number of operands, null for operands without a gradient,
    e.g. integer ids, masks, seeds) with values built from the op's operands,
    its results and the result gradients. It returns failure, after emitting a
    diagnostic, for a case it cannot differentiate (e.g. `reduce max`).
  }];
  let methods = [
    InterfaceMethod<
      "Builds the gradients of the operands from the gradients of the results.",
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

#endif // FERRY_DIALECTS_GRAPH_GRAPHINTERFACES_TD
