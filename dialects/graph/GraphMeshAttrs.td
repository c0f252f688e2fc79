//===- GraphMeshAttrs.td - the device mesh and shardings -----*- tablegen -*-===//
//
// Tensor parallelism's attributes (docs/parallelism.md): the mesh a module
// is compiled for, on the module as `graph.mesh`, and the sharding of a
// tensor over its `tensor` axis. Included from GraphOps.td.
//
//===----------------------------------------------------------------------===//

include "mlir/IR/AttrTypeBase.td"

class Graph_Attr<string name, string attrMnemonic>
    : AttrDef<Graph_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def Graph_MeshAttr : Graph_Attr<"Mesh", "mesh"> {
  let summary = "the device mesh a module is compiled for";
  let description = [{
    `tensor` × `data` processes: rank r is tensor rank r mod `tensor` of
    data rank r div `tensor`. Before ferry's partitioning the module is the
    whole model (every tensor has its whole shape, and sharded declarations
    say how they will be split); `partitioned` marks the module after it,
    where each sharded declaration and every value computed from it have
    this rank's shape.

    ```mlir
    module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 4>} { ... }
    module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 4, partitioned = true>} { ... }
    ```
  }];
  let parameters = (ins "int64_t":$tensor, "int64_t":$data,
                        DefaultValuedParameter<"bool", "false">:$partitioned);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Graph_ShardingAttr : Graph_Attr<"Sharding", "sharding"> {
  let summary = "how a tensor lies over the mesh's tensor axis";
  let description = [{
    `split = d`: dimension d is split into `tensor` equal parts, rank t
    holding part t. `partial = true`: every rank holds a whole-shaped
    partial sum, whose sum over the tensor group is the value (a
    row-parallel matmul's result before its all-reduce). Neither:
    replicated. A declaration's sharding is a split (never partial).

    ```mlir
    graph.parameter @layer.intermediate.weight : tensor<2x512x128xf32>
        init(normal, 2.000000e-02) hf "bert.encoder.layer.{}.intermediate.dense.weight"
        stacked sharding #graph.sharding<split = 1>
    ```
  }];
  let parameters = (ins DefaultValuedParameter<"int64_t", "-1">:$split,
                        DefaultValuedParameter<"bool", "false">:$partial);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isSplit() const { return getSplit() >= 0; }
    bool isReplicated() const { return !isSplit() && !getPartial(); }
  }];
}
