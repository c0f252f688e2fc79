//===- GraphCollectiveOps.td - replica collectives of `graph` -*- tablegen -*-===//
//
// The collectives over the replica group (execution.data_parallel replicas)
// that ferry-insert-collectives adds: a sum of every replica's gradient,
// a sum scattered into shards, and the shards gathered back. They are not
// Pure: every replica must run the same collectives in the same order, so
// no pass may drop, merge or move them. Included from GraphOps.td.
//
//===----------------------------------------------------------------------===//

def Graph_AllReduceOp : Graph_Op<"all_reduce",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "the sum of a tensor over the replicas";
  let description = [{
    Every replica gets the element-wise sum of the `replicas` replicas'
    `input`: how data-parallel gradients (each replica's partial sum over
    its share of the global batch) become the global batch's.

    ```mlir
    %g = graph.all_reduce %partial replicas 2 : tensor<128x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$replicas);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input `replicas` $replicas attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_ReduceScatterOp : Graph_Op<"reduce_scatter"> {
  let summary = "this replica's shard of the sum of a tensor over the replicas";
  let description = [{
    `input` is read flattened and padded with zeros to `replicas * shard`
    elements, shard = ceil(elements / replicas); replica r gets elements
    [r * shard, (r + 1) * shard) of the replicas' sum. Replicated tensor
    sharding reduces each gradient into the shard its optimizer updates.

    ```mlir
    %s = graph.reduce_scatter %g replicas 2 : tensor<30528x128xf32> -> tensor<1953792xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$replicas);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `replicas` $replicas attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_AllGatherOp : Graph_Op<"all_gather"> {
  let summary = "a tensor gathered from the replicas' shards";
  let description = [{
    The inverse layout of `graph.reduce_scatter`: `input` is this replica's
    shard (one dimension, shard = ceil(elements / replicas) of the result);
    the result is the replicas' shards in replica order, the padding past
    the result's elements dropped. Replicated tensor sharding gathers each
    weight before the phase that computes with it.

    ```mlir
    %w = graph.all_gather %shard replicas 2 : tensor<1953792xf32> -> tensor<30528x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$replicas);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `replicas` $replicas attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}
