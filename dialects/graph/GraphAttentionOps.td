//===- GraphAttentionOps.td - fused attention of `graph` -----*- tablegen -*-===//
//
// Attention as one op (ferry-fuse-attention, `execution.fusion`), with its
// own gradient: the FlashAttention formulation, in which the backward
// recomputes the probabilities from each query row's logsumexp instead of
// reading a stored [batch, heads, seq, seq] tensor. Included from
// GraphOps.td; verifiers and the gradient rule in GraphAttention.cpp.
//
//===----------------------------------------------------------------------===//

def Graph_AttentionOp : Graph_Op<"attention", [Pure, Graph_Differentiable,
    AttrSizedOperandSegments,
    AllTypesMatch<["query", "key", "value", "result"]>]> {
  let summary = "softmax(scale q kᵀ + mask) v with the probabilities' dropout";
  let description = [{
    Per sample and head, `result = dropout(softmax(scale * query keyᵀ +
    mask[b])) value`, with `graph.dropout`'s mask over the probabilities
    `[batch, heads, seq, seq]` (same seed, layer, sample offset, probability
    and purpose: the same elements dropped as the unfused ops would).
    `row_logsumexp` is each query row's logsumexp of the masked, scaled
    scores, which the gradient reads. The [seq, seq] probabilities are never
    a value: the kernels keep a tile of them at a time. `query`, `key`,
    `value` and `result` are `[batch, heads, seq, head_dim]`, or with
    `sequence_major` `[batch, seq, heads, head_dim]` (the linear layers'
    own layout: no head split or merge transposes), head_dim at most 64 (the
    CUDA kernel's tile); `mask` is `[batch, seq]` and `row_logsumexp`
    `[batch, heads, seq]` in both layouts. With `sequences`, the rows hold
    packed sequences: `sequence_ids` `[batch, seq]` gives each token's
    sequence, and a query attends only to its own sequence's keys (as
    `graph.softmax`'s `sequences`); `keys` then keys the dropout as
    `graph.dropout`'s.

    ```mlir
    %o, %lse = graph.attention %q, %k, %v, %mask, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 1.250000e-01 : f64} : tensor<8x2x128x64xf32>, tensor<8x128xf32> -> tensor<8x2x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key,
                       Graph_FloatTensor:$value, Graph_FloatTensor:$mask,
                       I64:$seed, Index:$layer, Index:$sample_offset,
                       Optional<Graph_IntTensor>:$sequence_ids,
                       Optional<Graph_IntTensor>:$dropout_keys,
                       F64Attr:$scale, F64Attr:$probability, StrAttr:$purpose,
                       UnitAttr:$sequence_major,
                       OptionalAttr<I64Attr>:$tensor_key_stride);
  let results = (outs Graph_FloatTensor:$result,
                      Graph_FloatTensor:$row_logsumexp);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $mask `,` $seed `,` $layer `,` $sample_offset (`sequences` $sequence_ids^)? (`keys` $dropout_keys^)? attr-dict `:` type($query) `,` type($mask) (`,` type($sequence_ids)^)? (`keys` type($dropout_keys)^)? `->` type($row_logsumexp)
  }];
  let hasVerifier = 1;
}

def Graph_AttentionGradOp : Graph_Op<"attention_grad", [Pure,
    AttrSizedOperandSegments,
    AllTypesMatch<["query", "key", "value", "result", "grad", "query_grad",
                   "key_grad", "value_grad"]>]> {
  let summary = "the gradients of graph.attention's query, key and value";
  let description = [{
    From the forward's operands, its `result` and `row_logsumexp`, and the
    result's gradient `grad`: the probabilities recomputed from the row
    logsumexp, the dropout mask regenerated from its key, and with
    `D_i = grad_i . result_i` the softmax's row sum, `dS = P (dP - D)`,
    `query_grad = scale dS key`, `key_grad = scale dSᵀ query`,
    `value_grad = dropout(P)ᵀ grad`. Attributes (and the layout) as
    graph.attention's, `sequences` too.

    ```mlir
    %dq, %dk, %dv = graph.attention_grad %q, %k, %v, %mask, %o, %lse, %do, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 1.250000e-01 : f64} : tensor<8x2x128x64xf32>, tensor<8x128xf32> -> tensor<8x2x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key,
                       Graph_FloatTensor:$value, Graph_FloatTensor:$mask,
                       Graph_FloatTensor:$result,
                       Graph_FloatTensor:$row_logsumexp,
                       Graph_FloatTensor:$grad, I64:$seed, Index:$layer,
                       Index:$sample_offset,
                       Optional<Graph_IntTensor>:$sequence_ids,
                       Optional<Graph_IntTensor>:$dropout_keys,
                       F64Attr:$scale,
                       F64Attr:$probability, StrAttr:$purpose,
                       UnitAttr:$sequence_major,
                       OptionalAttr<I64Attr>:$tensor_key_stride);
  let results = (outs Graph_FloatTensor:$query_grad,
                      Graph_FloatTensor:$key_grad,
                      Graph_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $mask `,` $result `,` $row_logsumexp `,` $grad `,` $seed `,` $layer `,` $sample_offset (`sequences` $sequence_ids^)? (`keys` $dropout_keys^)? attr-dict `:` type($query) `,` type($mask) (`,` type($sequence_ids)^)? (`keys` type($dropout_keys)^)? `->` type($row_logsumexp)
  }];
  let hasVerifier = 1;
}
