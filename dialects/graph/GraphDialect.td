//===- GraphDialect.td - the `graph` dialect record ---------*- tablegen -*-===//
//
// The model stage of ferry: tensor ops of BERT pretraining with value
// semantics, as the BERT builder emits them and as autodiff, recomputation and
// optimizer insertion transform them.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_GRAPH_GRAPHDIALECT_TD
#define FERRY_DIALECTS_GRAPH_GRAPHDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::ferry::graph";
  let summary = "Tensor ops of BERT-class models, as ferry's builder emits them.";
  let description = [{
    The `graph` dialect is the first stage of ferry's pipeline. It holds the
    model as tensor ops with value semantics on builtin ranked tensors of
    `f32`, `bf16` or `f16` with static shapes, organised as one `func.func`
    per block kind (embeddings, encoder layer, heads) and a top-level
    `@forward` that runs the encoder stack as an `scf.for` over stacked layer
    weights.

    Trainable state is declared once at module level with `graph.parameter`
    (and non-trainable state with `graph.variable`); functions read it with
    `graph.parameter_ref` or, for stacked per-layer state, with
    `graph.parameter_slice` at the layer counter. So one compiled layer body
    serves every layer and the IR does not grow with the layer count.

    ```mlir
    graph.parameter @layer.attention.query.weight : tensor<2x128x128xf32>
        init(normal, 2.000000e-02) hf "bert.encoder.layer.{}.attention.self.query.weight" stacked
    func.func @forward(...) {
      %h = scf.for %l = %c0 to %c2 step %c1 iter_args(%x = %e) -> (tensor<8x128x128xf32>) {
        %wq = graph.parameter_slice @layer.attention.query.weight[%l] : tensor<128x128xf32>
        ...
      }
    }
    ```

    Ops state only what the model computes; where a tensor lives and when it
    moves is decided by later stages (`phase`, `rt`).

    The passes hand each other the rest as `graph.*` attributes (the
    training settings, which function is `@train_step`, the micro-batch
    loop, input and output names, sharding), declared in
    `GraphAttributes.h` and checked by the dialect's verifier.
  }];
  let hasOperationAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Floating-point element types ferry computes in.
def Graph_FloatElement : AnyTypeOf<[F32, BF16, F16]>;

// Ranked tensors with static shapes: every later stage plans memory from them.
def Graph_FloatTensor : StaticShapeTensorOf<[F32, BF16, F16]>;
def Graph_IntTensor : StaticShapeTensorOf<[I32]>;
def Graph_AnyTensor : StaticShapeTensorOf<[F32, BF16, F16, I32, I64]>;
def Graph_FloatScalar : 0DTensorOf<[F32, BF16, F16]>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Graph_InitKind : I32EnumAttr<"InitKind",
    "how a parameter or variable is initialised", [
      I32EnumAttrCase<"normal", 0>,
      I32EnumAttrCase<"zeros", 1>,
      I32EnumAttrCase<"ones", 2>
    ]> {
  let cppNamespace = "::ferry::graph";
}

def Graph_ReduceKind : I32EnumAttr<"ReduceKind", "a reduction", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"mean", 1>,
      I32EnumAttrCase<"max", 2>,
      I32EnumAttrCase<"sum_squares", 3>
    ]> {
  let cppNamespace = "::ferry::graph";
}

def Graph_MeshAxis : I32EnumAttr<"MeshAxis",
    "an axis of the device mesh (docs/parallelism.md)", [
      I32EnumAttrCase<"data", 0>,
      I32EnumAttrCase<"tensor", 1>
    ]> {
  let cppNamespace = "::ferry::graph";
}

//===----------------------------------------------------------------------===//
// Base class
//===----------------------------------------------------------------------===//

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

#endif // FERRY_DIALECTS_GRAPH_GRAPHDIALECT_TD
