//===- GraphOps.td - ops of the `graph` dialect -------------*- tablegen -*-===//
//
// Every op of BERT pretraining's forward and loss. Shapes and element types
// are checked by the verifiers in GraphOps.cpp, which emit diagnostics and
// never assert.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_GRAPH_GRAPHOPS_TD
#define FERRY_DIALECTS_GRAPH_GRAPHOPS_TD

include "dialects/graph/GraphDialect.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "dialects/graph/GraphInterfaces.td"
include "dialects/graph/GraphMeshAttrs.td"

defvar Graph_Differentiable = DeclareOpInterfaceMethods<Graph_GradientOpInterface>;

//===----------------------------------------------------------------------===//
// State: declarations and reads
//===----------------------------------------------------------------------===//

class Graph_DeclOp<string mnemonic> : Graph_Op<mnemonic,
    [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<Graph_AnyTensor>:$type,
    Graph_InitKind:$init,
    OptionalAttr<F64Attr>:$init_std,
    StrAttr:$hf_name,
    UnitAttr:$stacked,
    UnitAttr:$no_weight_decay,
    OptionalAttr<Graph_ShardingAttr>:$sharding
  );
  let assemblyFormat = [{
    $sym_name `:` $type `init` `(` $init (`,` $init_std^)? `)` `hf` $hf_name
    (`stacked` $stacked^)? (`no_weight_decay` $no_weight_decay^)?
    (`sharding` $sharding^)? attr-dict
  }];
  // Unsharded, as every pass but tensor parallelism's declares state.
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$sym_name, "::mlir::Type":$type,
                   "::ferry::graph::InitKind":$init,
                   "::mlir::FloatAttr":$init_std, "::llvm::StringRef":$hf_name,
                   "bool":$stacked, "bool":$no_weight_decay), [{
      build($_builder, $_state, sym_name,
            ::llvm::cast<::mlir::RankedTensorType>(type), init, init_std,
            hf_name, stacked, no_weight_decay, ::ferry::graph::ShardingAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def Graph_ParameterOp : Graph_DeclOp<"parameter"> {
  let summary = "declares a trainable parameter";
  let description = [{
    Declares a trainable tensor at module level. `init` says how it starts:
    `normal` with the standard deviation given after it, `zeros` or `ones`.
    `hf` is its Hugging Face `BertForPreTraining` name, used for checkpoint
    import and export. A `stacked` parameter holds one entry per encoder layer
    in its leading dimension; its `hf` name has a `{}` where the layer number
    goes. `no_weight_decay` marks biases and LayerNorm parameters, which the
    optimizer does not decay. `sharding` splits it over the tensor axis of
    the module's `graph.mesh` (`#graph.sharding`; not the layer dimension):
    before partitioning its type is the whole tensor, whose split dimension
    the tensor group's size divides; after, its type is this rank's part.

    ```mlir
    graph.parameter @embeddings.word : tensor<30528x768xf32>
        init(normal, 2.000000e-02) hf "bert.embeddings.word_embeddings.weight"
    graph.parameter @layer.attention.query.bias : tensor<12x768xf32>
        init(zeros) hf "bert.encoder.layer.{}.attention.self.query.bias" stacked no_weight_decay
    ```
  }];
}

def Graph_VariableOp : Graph_DeclOp<"variable"> {
  let summary = "declares non-trainable state";
  let description = [{
    Declares state that is carried across steps but not trained: optimizer
    moments, the step counter, the loss scale. Same fields as
    `graph.parameter`; `hf` names the tensor in ferry's checkpoints.

    ```mlir
    graph.variable @optimizer.step : tensor<i64> init(zeros) hf "optimizer.step"
    ```
  }];
}

// Reads have a read effect (not Pure): CSE must not merge two reads of a
// declaration across a store to it.
def Graph_ParameterRefOp : Graph_Op<"parameter_ref",
    [MemoryEffects<[MemRead]>, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a declared parameter or variable";
  let description = [{
    The current value of a `graph.parameter` or `graph.variable`: all of it,
    all layers of a stacked one (as the optimizer and the global norm read it).
    The result type must equal the declared type.

    ```mlir
    %word = graph.parameter_ref @embeddings.word : tensor<1024x128xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Graph_ParameterSliceOp : Graph_Op<"parameter_slice",
    [MemoryEffects<[MemRead]>, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads one layer's entry of a stacked parameter";
  let description = [{
    The entry at `layer` of a `stacked` parameter or variable: its declared
    type without the leading (layer) dimension. This is how one compiled
    encoder-layer body serves every layer.

    ```mlir
    %wq = graph.parameter_slice @layer.attention.query.weight[%l] : tensor<128x128xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name, Index:$layer);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$name `[` $layer `]` attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Index tensors
//===----------------------------------------------------------------------===//

def Graph_IotaOp : Graph_Op<"iota", [Pure]> {
  let summary = "0, 1, 2, ... along one dimension";
  let description = [{
    An integer tensor whose element at index `(i0, ..., in)` is `i_dim`. BERT
    uses it for the position ids.

    ```mlir
    %pos = graph.iota dim 1 : tensor<8x128xi32>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs Graph_IntTensor:$result);
  let assemblyFormat = "`dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_AttentionMaskOp : Graph_Op<"attention_mask", [Pure]> {
  let summary = "turns a 0/1 input mask into an additive attention mask";
  let description = [{
    `result[b, s] = input_mask[b, s] != 0 ? 0 : fill`. `fill` is a large
    negative number (-10000 as in the MLPerf reference), added to the
    attention scores of padded keys before the softmax.

    ```mlir
    %m = graph.attention_mask %input_mask fill -1.000000e+04 : tensor<8x128xi32> -> tensor<8x128xf32>
    ```
  }];
  let arguments = (ins Graph_IntTensor:$input_mask, F64Attr:$fill);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input_mask `fill` $fill attr-dict `:` type($input_mask) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

def Graph_EmbeddingOp : Graph_Op<"embedding", [Pure, Graph_Differentiable]> {
  let summary = "gathers rows of an embedding table";
  let description = [{
    `result[i..., :] = table[ids[i...], :]`. The result has the shape of
    `ids` followed by the table's row width. Ids out of range are an error at
    run time.

    `tensor_row_stride` (tensor parallelism: the table is this rank's part
    of a table split along its rows) makes the table's rows the global ids
    from tensor rank x the stride on: ids elsewhere give rows of zeros (the
    sum over the tensor group is the whole table's lookup), and only an id
    outside the whole table is an error.

    ```mlir
    %e = graph.embedding %word[%ids] : tensor<1024x128xf32>, tensor<8x128xi32> -> tensor<8x128x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$table, Graph_IntTensor:$ids,
                       OptionalAttr<I64Attr>:$tensor_row_stride);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_GatherPositionsOp : Graph_Op<"gather_positions", [Pure, Graph_Differentiable]> {
  let summary = "gathers the hidden states at the masked positions";
  let description = [{
    `result[b, p, :] = input[b, positions[b, p], :]`: the MLM head runs only
    on the `max_predictions` masked positions of each sample.

    ```mlir
    %m = graph.gather_positions %h[%pos] : tensor<8x128x128xf32>, tensor<8x20xi32> -> tensor<8x20x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_IntTensor:$positions);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `[` $positions `]` attr-dict `:` type($input) `,` type($positions) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_TakeOp : Graph_Op<"take", [Pure, Graph_Differentiable]> {
  let summary = "takes one index along a dimension, dropping that dimension";
  let description = [{
    `result = input[..., index, ...]` with `index` at dimension `dim`. The NSP
    pooler takes token 0 with it.

    ```mlir
    %cls = graph.take %h dim 1 index 0 : tensor<8x128x128xf32> -> tensor<8x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$dim, I64Attr:$index);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim `index` $index attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Graph_MatmulOp : Graph_Op<"matmul", [Pure, Graph_Differentiable]> {
  let summary = "batched matrix product with transpose flags";
  let description = [{
    `result[..., m, n] = sum_k A[..., m, k] * B[..., k, n]` where `A` is `lhs`
    (or its transpose in the last two dimensions when `transpose_lhs` is set)
    and `B` likewise for `rhs`. Either both operands have the same rank and
    the same leading (batch) dimensions, or `rhs` has rank 2 and is shared by
    every batch entry of `lhs` (a linear layer). Linear weights are stored as
    Hugging Face does, `[out, in]`, and used with `transpose_rhs`.

    ```mlir
    // A linear layer: [8, 128, 128] x [512, 128]^T -> [8, 128, 512]
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<8x128x128xf32>, tensor<512x128xf32> -> tensor<8x128x512xf32>
    // Attention scores: [8, 2, 128, 64] x [8, 2, 128, 64]^T -> [8, 2, 128, 128]
    %s = graph.matmul %q, %k {transpose_rhs} : tensor<8x2x128x64xf32>, tensor<8x2x128x64xf32> -> tensor<8x2x128x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_BiasAddOp : Graph_Op<"bias_add",
    [Pure, Graph_Differentiable, AllTypesMatch<["input", "result"]>]> {
  let summary = "adds a bias along the last dimension";
  let description = [{
    `result[..., j] = input[..., j] + bias[j]`.

    ```mlir
    %y = graph.bias_add %x, %b : tensor<8x128x512xf32>, tensor<512xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$bias);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input `,` $bias attr-dict `:` type($input) `,` type($bias)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Graph_BinaryOp<string mnemonic, string what>
    : Graph_Op<mnemonic, [Pure, Graph_Differentiable, Elementwise, SameOperandsAndResultType]> {
  let summary = "elementwise " # what;
  let description = "Elementwise " # what # [{ of two tensors of the same type.

    ```mlir
    %c = graph.}] # mnemonic # [{ %a, %b : tensor<8x128x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Graph_AddOp : Graph_BinaryOp<"add", "sum">;
def Graph_SubOp : Graph_BinaryOp<"sub", "difference">;
def Graph_MulOp : Graph_BinaryOp<"mul", "product">;
def Graph_DivOp : Graph_BinaryOp<"div", "quotient">;

class Graph_UnaryOp<string mnemonic>
    : Graph_Op<mnemonic, [Pure, Graph_Differentiable, Elementwise, SameOperandsAndResultType]> {
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Graph_GeluOp : Graph_UnaryOp<"gelu"> {
  let summary = "GELU with the exact erf";
  let description = [{
    `x * 0.5 * (1 + erf(x / sqrt(2)))`, as BERT, Hugging Face (`gelu`) and
    the MLPerf reference define it; not the tanh approximation.

    ```mlir
    %y = graph.gelu %x : tensor<8x128x512xf32>
    ```
  }];
}

def Graph_TanhOp : Graph_UnaryOp<"tanh"> {
  let summary = "hyperbolic tangent";
  let description = [{
    Elementwise `tanh`, the activation of BERT's pooler.

    ```mlir
    %y = graph.tanh %x : tensor<8x128xf32>
    ```
  }];
}

def Graph_ScaleOp : Graph_Op<"scale",
    [Pure, Graph_Differentiable, Elementwise, SameOperandsAndResultType]> {
  let summary = "multiplies by a compile-time constant";
  let description = [{
    `result = input * factor`: the `1/sqrt(head_size)` of attention scores
    and the `1/global_batch_size` of the NSP loss.

    ```mlir
    %y = graph.scale %x by 1.250000e-01 : tensor<8x2x128x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, F64Attr:$factor);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalisation, softmax, dropout
//===----------------------------------------------------------------------===//

def Graph_LayerNormOp : Graph_Op<"layer_norm",
    [Pure, Graph_Differentiable, AllTypesMatch<["input", "result"]>,
     AllTypesMatch<["scale", "bias"]>]> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias`, mean and (biased)
    variance over the last dimension; `scale` and `bias` have the size of that
    dimension. BERT uses `epsilon = 1e-12`.

    ```mlir
    %y = graph.layer_norm %x, %gamma, %beta eps 9.9999999999999998E-13 : tensor<8x128x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       Graph_FloatTensor:$bias, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `eps` $epsilon attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Graph_SoftmaxOp : Graph_Op<"softmax",
    [Pure, Graph_Differentiable, AllTypesMatch<["input", "result"]>]> {
  let summary = "softmax over the last dimension, after an additive mask";
  let description = [{
    `softmax(input[b, ..., :] + mask[b, :])` over the last dimension (the
    keys). `mask` is `[batch, keys]`, broadcast over the dimensions between,
    typically from `graph.attention_mask`.

    With `sequences`, the rows hold packed sequences: `sequence_ids` is
    `[batch, keys]` (each token's sequence in its row), the input is
    `[batch, ..., queries, keys]` with as many queries as keys, and the keys
    of other sequences than the query's take no part (weight 0), so each
    sequence attends only to itself.

    ```mlir
    %p = graph.softmax %scores, %mask : tensor<8x2x128x128xf32>, tensor<8x128xf32>
    %q = graph.softmax %scores, %mask sequences %ids : tensor<8x2x128x128xf32>, tensor<8x128xf32>, tensor<8x128xi32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$mask,
                       Optional<Graph_IntTensor>:$sequence_ids);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $mask (`sequences` $sequence_ids^)? attr-dict `:` type($input) `,` type($mask) (`,` type($sequence_ids)^)?
  }];
  let hasVerifier = 1;
}

def Graph_DropoutOp : Graph_Op<"dropout",
    [Pure, Graph_Differentiable, AllTypesMatch<["input", "result"]>]> {
  let summary = "seeded inverted dropout";
  let description = [{
    Zeroes each element with probability `probability` and scales the rest by
    `1 / (1 - probability)`. The mask comes from a counter-based generator
    keyed by `(seed, purpose, layer, sample_offset + b, element)`, where `b`
    indexes the leading (sample) dimension: masks do not depend on call order,
    micro-batch size or execution mode, and recomputation regenerates them
    exactly from the same operands. `purpose` names the dropout site; two
    sites of one layer must differ. `tensor_key_stride` (tensor
    parallelism: the input is this rank's part of a tensor split along its
    first dimension after the sample's) offsets each element's key by
    tensor rank × stride, its place in the whole sample, so the mask equals
    one process's.

    ```mlir
    %y = graph.dropout %x, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<8x2x128x128xf32>
    ```

    Packed rows (several samples a row): `keys` `dropout_keys` is `[batch,
    seq, 2]`, each token's (sample key, position in its sample), and an
    element takes the decision of the same element of its unpacked sample:
    the input is `[batch, seq, ...]` (a token's elements) or `[batch, heads,
    seq, seq]` (attention probabilities, keyed by the query's sample and the
    query's and key's positions).
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64:$seed, Index:$layer,
                       Index:$sample_offset,
                       Optional<Graph_IntTensor>:$dropout_keys,
                       F64Attr:$probability, StrAttr:$purpose,
                       OptionalAttr<I64Attr>:$tensor_key_stride);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $seed `,` $layer `,` $sample_offset (`keys` $dropout_keys^)? attr-dict `:` type($input) (`keys` type($dropout_keys)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure, Graph_Differentiable]> {
  let summary = "reinterprets a tensor with another shape";
  let description = [{
    Same elements in the same (row-major) order, another static shape with
    the same element count: the split of heads `[B, S, H] -> [B, S, N, D]`.

    ```mlir
    %y = graph.reshape %x : tensor<8x128x128xf32> -> tensor<8x128x2x64xf32>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_TransposeOp : Graph_Op<"transpose", [Pure, Graph_Differentiable]> {
  let summary = "permutes dimensions";
  let description = [{
    `result` dimension `i` is `input` dimension `permutation[i]`.

    ```mlir
    %y = graph.transpose %x [0, 2, 1, 3] : tensor<8x128x2x64xf32> -> tensor<8x2x128x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input $permutation attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and the loss
//===----------------------------------------------------------------------===//

def Graph_ReduceOp : Graph_Op<"reduce", [Pure, Graph_Differentiable]> {
  let summary = "reduces over a set of dimensions";
  let description = [{
    `sum`, `mean`, `max` or `sum_squares` over the listed dimensions (in
    increasing order, each once), which are dropped from the result.

    ```mlir
    %s = graph.reduce sum %x dims [0, 1] : tensor<8x20xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_ReduceKind:$kind, Graph_FloatTensor:$input,
                       DenseI64ArrayAttr:$dims);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $kind $input `dims` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_SoftmaxCrossEntropyOp : Graph_Op<"softmax_cross_entropy", [Pure, Graph_Differentiable]> {
  let summary = "weighted sum of softmax cross-entropies over the classes";
  let description = [{
    `result = sum_i weights[i] * (logsumexp(logits[i, :C]) - logits[i, labels[i]])`
    over every slot `i` of `labels`, with `C = num_classes`. Classes at or
    beyond `num_classes` (the vocabulary padding) take no part in the softmax.
    For the MLM loss, `weights` is 1 for a counted masked slot and 0 for
    padding; the builder divides the sum by the global batch's count of masked
    slots, so accumulation and replicas compute the same step as one batch.

    ```mlir
    %s = graph.softmax_cross_entropy %logits, %labels, %w classes 1000
        : tensor<8x20x1024xf32>, tensor<8x20xi32>, tensor<8x20xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IntTensor:$labels,
                       Graph_FloatTensor:$weights, I64Attr:$num_classes);
  let results = (outs Graph_FloatScalar:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $weights `classes` $num_classes attr-dict `:`
    type($logits) `,` type($labels) `,` type($weights) `->` type($result)
  }];
  let hasVerifier = 1;
}

include "dialects/graph/GraphTrainingOps.td"
include "dialects/graph/GraphCollectiveOps.td"
include "dialects/graph/GraphAttentionOps.td"
include "dialects/graph/GraphClassSplitOps.td"

#endif // FERRY_DIALECTS_GRAPH_GRAPHOPS_TD
