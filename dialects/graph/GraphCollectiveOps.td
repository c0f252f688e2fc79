//===- GraphCollectiveOps.td - collectives of `graph` ---------*- tablegen -*-===//
//
// Collectives over a group of the device mesh (docs/parallelism.md): the
// data-parallel group (`over data`, the default: the replicas of
// execution.data_parallel) or the tensor-parallel group (`over tensor`).
// ferry-insert-collectives adds the data group's: a sum of every replica's
// gradient, a sum scattered into shards, and the shards gathered back.
// Tensor parallelism adds the tensor group's before autodiff, with
// Megatron's conjugate pairs (f: graph.copy_to_group, g: graph.all_reduce),
// so their gradient rules (GraphCollectives.cpp) state each pair's other
// half.
// None is Pure: every rank must run the same collectives in the same order,
// so no pass may drop, merge or move them. Included from GraphOps.td.
//
//===----------------------------------------------------------------------===//

defvar Graph_GroupAttr = DefaultValuedAttr<Graph_MeshAxis,
                                           "::ferry::graph::MeshAxis::data">;

def Graph_AllReduceOp : Graph_Op<"all_reduce",
    [Graph_Differentiable, AllTypesMatch<["input", "result"]>]> {
  let summary = "the sum (or maximum) of a tensor over a group";
  let description = [{
    Every rank of the group (`replicas` ranks) gets the element-wise sum of
    the ranks' `input`: how data-parallel gradients (each replica's partial
    sum over its share of the global batch) become the global batch's, and
    how a row-parallel matmul's partial sums become the whole product
    (Megatron's g). `reduction max` takes the element-wise maximum instead
    (a cross-entropy's row maxima when its classes are split).

    Gradient: over the tensor group, the sum's is the result's gradient
    itself (g's backward is the identity: every rank computes the same loss
    from the replicated result, so every rank's gradient of it is the
    same). Over the data group there is none (each replica's loss differs;
    data-parallel sums are inserted after autodiff), nor for the maximum:
    autodiff reports either on a loss path (a cross-entropy split over
    classes will take its row maxima through an op that stops the
    gradient).

    ```mlir
    %g = graph.all_reduce %partial replicas 2 : tensor<128x128xf32>
    %h = graph.all_reduce %partial replicas 2 over tensor : tensor<8x128x128xf32>
    %m = graph.all_reduce %rowmax replicas 2 over tensor reduction max : tensor<64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$replicas,
                       Graph_GroupAttr:$group,
                       DefaultValuedAttr<Graph_ReduceKind,
                                         "::ferry::graph::ReduceKind::sum">:$reduction);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `replicas` $replicas (`over` $group^)? (`reduction` $reduction^)?
    attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Graph_CopyToGroupOp : Graph_Op<"copy_to_group",
    [Graph_Differentiable, AllTypesMatch<["input", "result"]>]> {
  let summary = "a replicated tensor entering a split region (Megatron's f)";
  let description = [{
    The identity forward: `input` is the same on every rank of the group,
    and its users compute with split weights. Its gradient is the sum of the
    ranks' gradients of `result` over the group (an all-reduce), since each
    rank's backward through split weights yields a partial one. It lowers to
    no kernel (the result is its input's buffer).

    ```mlir
    %x1 = graph.copy_to_group %x replicas 2 over tensor : tensor<8x128x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$replicas,
                       Graph_GroupAttr:$group);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `replicas` $replicas (`over` $group^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Graph_ReduceScatterOp : Graph_Op<"reduce_scatter", [Graph_Differentiable]> {
  let summary = "this replica's shard of the sum of a tensor over the replicas";
  let description = [{
    `input` is read flattened and padded with zeros to `replicas * shard`
    elements, shard = ceil(elements / replicas); replica r gets elements
    [r * shard, (r + 1) * shard) of the replicas' sum. Replicated tensor
    sharding reduces each gradient into the shard its optimizer updates.
    Gradient: the all-gather of the result's gradient.

    ```mlir
    %s = graph.reduce_scatter %g replicas 2 : tensor<30528x128xf32> -> tensor<1953792xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$replicas,
                       Graph_GroupAttr:$group);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `replicas` $replicas (`over` $group^)? attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_AllGatherOp : Graph_Op<"all_gather", [Graph_Differentiable]> {
  let summary = "a tensor gathered from the replicas' shards";
  let description = [{
    The inverse layout of `graph.reduce_scatter`: `input` is this replica's
    shard (one dimension, shard = ceil(elements / replicas) of the result);
    the result is the replicas' shards in replica order, the padding past
    the result's elements dropped. Replicated tensor sharding gathers each
    weight before the phase that computes with it; sequence parallelism
    gathers the sequence before the layers that need all of it.

    Gradient: the reduce-scatter of the result's gradient: its users are
    taken to compute a partial gradient on each rank, as Megatron's
    sequence-parallel gather feeds split weights. With
    `replicated_gradient`, its users compute the same whole gradient on
    every rank (the tensor group's ranks then all compute the pretraining
    heads from the gathered sequence), and the gradient is this rank's part
    of it, `graph.part_of_group` (Megatron's gather with
    `tensor_parallel_output_grad=False`).

    ```mlir
    %w = graph.all_gather %shard replicas 2 : tensor<1953792xf32> -> tensor<30528x128xf32>
    %h = graph.all_gather %part replicas 2 over tensor {replicated_gradient} : tensor<65536xf32> -> tensor<2x8x64x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$replicas,
                       Graph_GroupAttr:$group, UnitAttr:$replicated_gradient);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `replicas` $replicas (`over` $group^)? attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_PartOfGroupOp : Graph_Op<"part_of_group", [Graph_Differentiable]> {
  let summary = "this rank's part of a tensor that is the same on every rank";
  let description = [{
    `input` is replicated over the group; rank r gets elements
    [r * n, (r + 1) * n) of it flattened, n = elements / replicas (which the
    group divides), in the result's shape. No rank communicates. Sequence
    parallelism splits a replicated activation this way where it meets a
    split one (Megatron's scatter to the sequence-parallel region).
    Gradient: the all-gather of the result's gradient, the whole gradient
    of the replicated input on every rank.

    ```mlir
    %p = graph.part_of_group %x replicas 2 over tensor : tensor<2x8x64x128xf32> -> tensor<8x64x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$replicas,
                       Graph_GroupAttr:$group);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `replicas` $replicas (`over` $group^)? attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}
