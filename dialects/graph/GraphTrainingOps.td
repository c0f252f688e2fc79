//===- GraphTrainingOps.td - training ops of `graph` --------*- tablegen -*-===//
//
// The ops the training passes add: the gradient op of each forward op whose
// backward is not itself a forward op, state updates (store, accumulate) and
// the optimizer (global norm, learning-rate schedule, Adam-family update).
// Included from GraphOps.td.
//
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Gradient ops (autodiff emits them; see GradientOpInterface)
//===----------------------------------------------------------------------===//

def Graph_GeluGradOp : Graph_Op<"gelu_grad",
    [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "gradient of the exact GELU";
  let description = [{
    `result = grad * gelu'(input)` with
    `gelu'(x) = 0.5 * (1 + erf(x / sqrt 2)) + x * exp(-x^2 / 2) / sqrt(2 pi)`.

    ```mlir
    %dx = graph.gelu_grad %x, %dy : tensor<8x128x512xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$grad);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($result)";
}

def Graph_TanhGradOp : Graph_Op<"tanh_grad",
    [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "gradient of tanh from its output";
  let description = [{
    `result = grad * (1 - output^2)`, where `output` is the forward's result.

    ```mlir
    %dx = graph.tanh_grad %y, %dy : tensor<8x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$output, Graph_FloatTensor:$grad);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($result)";
}

def Graph_SoftmaxGradOp : Graph_Op<"softmax_grad",
    [Pure, SameOperandsAndResultType]> {
  let summary = "gradient of the softmax over the last dimension";
  let description = [{
    `result = output * (grad - sum(grad * output))` per row of the last
    dimension, where `output` is the forward's result. The additive mask has
    no gradient.

    ```mlir
    %ds = graph.softmax_grad %p, %dp : tensor<8x2x128x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$output, Graph_FloatTensor:$grad);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($result)";
}

def Graph_LayerNormGradOp : Graph_Op<"layer_norm_grad", [Pure,
    AllTypesMatch<["input", "grad", "input_grad"]>,
    AllTypesMatch<["scale", "scale_grad", "bias_grad"]>]> {
  let summary = "gradient of layer normalisation";
  let description = [{
    The gradients of `graph.layer_norm`'s input, scale and bias, recomputing
    the mean and variance from `input` (so the forward need not keep them).

    ```mlir
    %dx, %dscale, %dbias = graph.layer_norm_grad %x, %gamma, %dy eps 9.9999999999999998E-13 : tensor<8x128x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       Graph_FloatTensor:$grad, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Graph_FloatTensor:$scale_grad,
                      Graph_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $grad `eps` $epsilon attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Graph_EmbeddingGradOp : Graph_Op<"embedding_grad", [Pure]> {
  let summary = "scatter-adds row gradients into an embedding table's shape";
  let description = [{
    `result = 0; result[ids[i...], :] += grad[i..., :]`: the gradient of
    `graph.embedding` with respect to its table. Repeated ids add up.
    `tensor_row_stride` as graph.embedding's: only the ids of this rank's
    rows add.

    ```mlir
    %dw = graph.embedding_grad %dy[%ids] : tensor<8x128x128xf32>, tensor<8x128xi32> -> tensor<1024x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$grad, Graph_IntTensor:$ids,
                       OptionalAttr<I64Attr>:$tensor_row_stride);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `[` $ids `]` attr-dict `:` type($grad) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_GatherPositionsGradOp : Graph_Op<"gather_positions_grad", [Pure]> {
  let summary = "scatter-adds gradients back to the gathered positions";
  let description = [{
    `result = 0; result[b, positions[b, p], :] += grad[b, p, :]`: the
    gradient of `graph.gather_positions` with respect to its input.

    ```mlir
    %dh = graph.gather_positions_grad %dm[%pos] : tensor<8x20x128xf32>, tensor<8x20xi32> -> tensor<8x128x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$grad, Graph_IntTensor:$positions);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `[` $positions `]` attr-dict `:` type($grad) `,` type($positions) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_TakeGradOp : Graph_Op<"take_grad", [Pure]> {
  let summary = "places a gradient at one index of a dimension, zeros elsewhere";
  let description = [{
    The gradient of `graph.take`: `result[..., index, ...] = grad`, zero at
    every other index of dimension `dim`.

    ```mlir
    %dh = graph.take_grad %dcls dim 1 index 0 : tensor<8x128xf32> -> tensor<8x128x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$grad, I64Attr:$dim, I64Attr:$index);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `dim` $dim `index` $index attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_BroadcastOp : Graph_Op<"broadcast", [Pure]> {
  let summary = "repeats a tensor along inserted dimensions";
  let description = [{
    The inverse shape of `graph.reduce`: `dims` lists (increasing) the result
    dimensions that `input` lacks; the result repeats `input` along them.
    The gradient of a sum.

    ```mlir
    %y = graph.broadcast %x dims [0, 1] : tensor<f32> -> tensor<8x20xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_SoftmaxCrossEntropyGradOp : Graph_Op<"softmax_cross_entropy_grad",
    [Pure, AllTypesMatch<["logits", "result"]>]> {
  let summary = "gradient of the weighted softmax cross-entropy";
  let description = [{
    `result[i, c] = grad * weights[i] * (softmax(logits[i, :C])[c] - [c == labels[i]])`
    for `c < C = num_classes` and 0 for the padded classes, where `grad` is
    the (scalar) gradient of `graph.softmax_cross_entropy`'s result.

    ```mlir
    %dl = graph.softmax_cross_entropy_grad %logits, %labels, %w, %g classes 1000
        : tensor<8x20x1024xf32>, tensor<8x20xi32>, tensor<8x20xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IntTensor:$labels,
                       Graph_FloatTensor:$weights, Graph_FloatScalar:$grad,
                       I64Attr:$num_classes);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $weights `,` $grad `classes` $num_classes attr-dict `:`
    type($logits) `,` type($labels) `,` type($weights) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def Graph_ArgmaxCorrectOp : Graph_Op<"argmax_correct", [Pure]> {
  let summary = "weighted count of slots whose argmax is the label";
  let description = [{
    `result = sum_i weights[i] * [argmax(logits[i, :C]) == labels[i]]`, ties to
    the lowest class: the numerator of the masked-LM accuracy. Not
    differentiable (a metric).

    ```mlir
    %c = graph.argmax_correct %logits, %labels, %w classes 1000
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

//===----------------------------------------------------------------------===//
// State updates
//===----------------------------------------------------------------------===//

class Graph_StateUpdateOp<string mnemonic, string what>
    : Graph_Op<mnemonic, [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = what # " a declared parameter or variable";
  let arguments = (ins Graph_AnyTensor:$value, FlatSymbolRefAttr:$name,
                       Optional<Index>:$layer);
  let assemblyFormat = [{
    $value `into` $name (`[` $layer^ `]`)? attr-dict `:` type($value)
  }];
}

def Graph_StoreOp : Graph_StateUpdateOp<"store", "overwrites"> {
  let description = [{
    Overwrites the whole of an unstacked declaration, or the entry at `layer`
    of a stacked one, with `value` (whose type must be the declared type,
    without the layer dimension for an entry).

    ```mlir
    graph.store %zeros into @grad.embeddings.word : tensor<1024x128xf32>
    graph.store %h into @stash.encoder_layer.0[%l] : tensor<8x128x128xf32>
    ```
  }];
}

def Graph_AccumulateOp : Graph_StateUpdateOp<"accumulate", "adds into"> {
  let description = [{
    Adds `value` into an unstacked declaration or into the entry at `layer`
    of a stacked one: how gradients of parameters accumulate over uses, layers
    and micro-batches.

    ```mlir
    graph.accumulate %dw into @grad.layer.attention.query.weight[%l] : tensor<128x128xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def Graph_GlobalNormOp : Graph_Op<"global_norm", [Pure]> {
  let summary = "the L2 norm over every element of every operand";
  let description = [{
    `sqrt(sum over operands of sum(x^2))`, each element counted once: the
    norm that clip-by-global-norm divides by.

    ```mlir
    %n = graph.global_norm %g0, %g1 : tensor<1024x128xf32>, tensor<2x128xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs);
  let results = (outs Graph_FloatScalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
}

def Graph_LearningRateOp : Graph_Op<"learning_rate", [Pure]> {
  let summary = "the learning rate at an update count";
  let description = [{
    With `s = step` (updates already applied), `poly`:
    `lr * (1 - min(s, total_steps) / total_steps)^power`, replaced during
    warmup (`s - start_warmup_step < warmup_steps`) by
    `lr * (s - start_warmup_step) / warmup_steps`; `constant`: `lr`.

    ```mlir
    %lr = graph.learning_rate %step {kind = "poly", lr = 1.0e-03 : f64, warmup_steps = 10 : i64,
        start_warmup_step = 0 : i64, power = 1.0 : f64, total_steps = 100 : i64} : tensor<f32>
    ```
  }];
  let arguments = (ins Index:$step, StrAttr:$kind, F64Attr:$lr,
                       I64Attr:$warmup_steps, I64Attr:$start_warmup_step,
                       F64Attr:$power, I64Attr:$total_steps);
  let results = (outs Graph_FloatScalar:$result);
  let assemblyFormat = "$step attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_OptimizerUpdateOp : Graph_Op<"optimizer_update",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>, AttrSizedOperandSegments]> {
  let summary = "one LAMB or AdamW update of a parameter, in place";
  let description = [{
    Updates `param` and its moments `m`, `v` (variables of the parameter's
    type) from the accumulated gradient `grad`, scaled first by
    `min(1, clip_norm / global_norm)` (`clip_norm` 0: no clipping), with the
    learning rate `lr` at update `step + 1` (bias corrections count updates
    from 1). `weight_decay` is 0 for biases and LayerNorm parameters. LAMB's
    trust ratio is taken per layer entry of a stacked parameter. With a
    `layer` index, only that entry of a stacked parameter (and of its
    gradient and moments) is updated: phased execution updates one layer per
    phase. With `unscale %s` (fp16 loss scaling) the gradient holds s times
    its value: it is divided by s, `norm` is the true (unscaled) norm, and
    when `norm` is not finite (an overflow) nothing is updated. With
    `shard_replicas` N (replicated tensor sharding), the parameter, gradient
    and moments are this replica's shards of N, and LAMB's per-tensor norms
    are summed over the replicas, so its trust ratio is the whole tensor's.
    Formulas: ARCHITECTURE.md, "Optimizers".

    ```mlir
    graph.optimizer_update @embeddings.word grad @grad.embeddings.word moments @adam_m.embeddings.word, @adam_v.embeddings.word
        lr %lr norm %norm step %step {optimizer = "lamb", beta1 = 0.9 : f64, beta2 = 0.999 : f64,
        epsilon = 1.0e-06 : f64, weight_decay = 0.01 : f64, clip_norm = 1.0 : f64} : tensor<f32>, tensor<f32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, FlatSymbolRefAttr:$grad,
                       FlatSymbolRefAttr:$m, FlatSymbolRefAttr:$v,
                       Graph_FloatScalar:$lr, Graph_FloatScalar:$global_norm,
                       Index:$step, StrAttr:$optimizer, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$epsilon, F64Attr:$weight_decay,
                       F64Attr:$clip_norm, Optional<Index>:$layer,
                       Optional<Graph_FloatScalar>:$loss_scale,
                       OptionalAttr<I64Attr>:$shard_replicas);
  let assemblyFormat = [{
    $param (`[` $layer^ `]`)? `grad` $grad `moments` $m `,` $v `lr` $lr `norm` $global_norm `step` $step
    (`unscale` $loss_scale^)? attr-dict `:` type($lr) `,` type($global_norm) (`,` type($loss_scale)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Phases
//===----------------------------------------------------------------------===//

def Graph_PhaseOp : Graph_Op<"phase", [SingleBlock, NoTerminator]> {
  let summary = "a unit of phased execution";
  let description = [{
    A phase of `execution.mode: phased` (ferry-phased-execution): what runs
    between two rounds of host transfers. What it reads from or writes to
    declarations placed in host memory is loaded into device memory when it
    starts and stored back when it ends, so values only cross phases through
    declarations: the region has no results, and dominance keeps any SSA
    value from leaking out. Inside a layer loop, each iteration is one
    instance of the phase.

    ```mlir
    scf.for %l = %c0 to %c24 step %c1 {
      graph.phase "layer.fwd" {
        scf.for %i = %c0 to %c4 step %c1 { ... }
      }
    }
    ```
  }];
  let arguments = (ins StrAttr:$phase_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$phase_name attr-dict-with-keyword $body";
}

//===----------------------------------------------------------------------===//
// Fused kernels (ferry-fuse-epilogues)
//===----------------------------------------------------------------------===//

def Graph_FusedMatmulOp : Graph_Op<"fused_matmul", [Pure]> {
  let summary = "a matmul with its epilogue: scale, bias, or bias gradient";
  let description = [{
    What ferry-fuse-epilogues makes of a `graph.matmul` and the op around it
    that one GEMM call can do too (cuBLASLt epilogues on the GPU):
    `result = alpha * op(lhs) op(rhs)` with the shapes and transpose flags of
    `graph.matmul`, plus

    - with `bias %b` (shape `[n]`): `b` added along the last dimension, what
      `graph.bias_add` of the product computes;
    - with a second result (`bias_grad`): `sum over k of lhs`, shape `[m]`,
      for a rank-2 `lhs` used transposed: the gradient of a linear layer's
      bias (`graph.reduce sum` over the rows of the output gradient) taken
      from the same operand as the weight gradient.

    At most one of the two. Not differentiable: it only exists after the
    training passes.

    ```mlir
    %y = graph.fused_matmul %x, %w bias %b {transpose_rhs} : tensor<8x128x128xf32>, tensor<512x128xf32>, tensor<512xf32> -> tensor<8x128x512xf32>
    %s = graph.fused_matmul %q, %k {transpose_rhs, alpha = 1.250000e-01 : f64} : tensor<8x2x128x64xf32>, tensor<8x2x128x64xf32> -> tensor<8x2x128x128xf32>
    %dw, %db = graph.fused_matmul %dy, %x {transpose_lhs} : tensor<1024x512xf32>, tensor<1024x128xf32> -> tensor<512x128xf32>, tensor<512xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                       Optional<Graph_FloatTensor>:$bias,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
  let results = (outs Graph_FloatTensor:$result,
                      Optional<Graph_FloatTensor>:$bias_grad);
  let assemblyFormat = [{
    $lhs `,` $rhs (`bias` $bias^)? attr-dict `:` type($lhs) `,` type($rhs)
    (`,` type($bias)^)? `->` type($result) (`,` type($bias_grad)^)?
  }];
  let hasVerifier = 1;
}

def Graph_SoftmaxDropoutOp : Graph_Op<"softmax_dropout", [Pure,
    AttrSizedOperandSegments,
    AllTypesMatch<["input", "probs", "result"]>]> {
  let summary = "attention probabilities and their dropout in one pass";
  let description = [{
    What ferry-fuse-softmax-dropout makes of `graph.dropout(graph.softmax(x,
    mask))`: `probs` is the softmax (as `graph.softmax`; the backward reads
    it), `result` its dropout (as `graph.dropout` with the same operands and
    attributes, so the same mask). `sequences` as `graph.softmax`'s, `keys`
    as `graph.dropout`'s.

    ```mlir
    %p, %d = graph.softmax_dropout %s, %mask, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<8x2x128x128xf32>, tensor<8x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$mask,
                       I64:$seed, Index:$layer, Index:$sample_offset,
                       Optional<Graph_IntTensor>:$sequence_ids,
                       Optional<Graph_IntTensor>:$dropout_keys,
                       F64Attr:$probability, StrAttr:$purpose,
                       OptionalAttr<I64Attr>:$tensor_key_stride);
  let results = (outs Graph_FloatTensor:$probs, Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $mask `,` $seed `,` $layer `,` $sample_offset (`sequences` $sequence_ids^)? (`keys` $dropout_keys^)? attr-dict `:` type($input) `,` type($mask) (`,` type($sequence_ids)^)? (`keys` type($dropout_keys)^)?
  }];
  let hasVerifier = 1;
}

def Graph_DropoutSoftmaxGradOp : Graph_Op<"dropout_softmax_grad", [Pure,
    AllTypesMatch<["output", "grad", "result"]>]> {
  let summary = "the attention probabilities' gradient through their dropout";
  let description = [{
    `graph.softmax_grad(output, graph.dropout(grad, ...))` in one pass: the
    incoming gradient takes the forward's dropout mask (same seed, layer,
    sample offset, keys, probability and purpose), then the softmax's
    gradient from its output.

    ```mlir
    %dx = graph.dropout_softmax_grad %p, %dy, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<8x2x128x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$output, Graph_FloatTensor:$grad,
                       I64:$seed, Index:$layer, Index:$sample_offset,
                       Optional<Graph_IntTensor>:$dropout_keys,
                       F64Attr:$probability, StrAttr:$purpose,
                       OptionalAttr<I64Attr>:$tensor_key_stride);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $output `,` $grad `,` $seed `,` $layer `,` $sample_offset (`keys` $dropout_keys^)? attr-dict `:` type($output) (`keys` type($dropout_keys)^)?
  }];
  let hasVerifier = 1;
}

def Graph_ResidualLayerNormOp : Graph_Op<"residual_layer_norm", [Pure,
    AttrSizedOperandSegments,
    AllTypesMatch<["input", "residual", "sum", "result"]>,
    AllTypesMatch<["scale", "bias"]>]> {
  let summary = "a sublayer's output, dropped out, added to the residual, normalised";
  let description = [{
    What ferry-fuse-residual-norm makes of
    `graph.layer_norm(graph.add(graph.dropout(input), residual))`, the end
    of every BERT sublayer: `sum = dropout(input) + residual` (without
    `dropout ...`, `input + residual`; `keys` as `graph.dropout`'s),
    `result = layer_norm(sum)` as
    `graph.layer_norm` with `scale`, `bias` and `epsilon`. `sum` is what
    the layer norm's gradient reads.

    ```mlir
    %s, %y = graph.residual_layer_norm %x, %res, %gamma, %beta eps 9.9999999999999998E-13
        dropout %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "ffn.output"}
        : tensor<8x128x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$residual,
                       Graph_FloatTensor:$scale, Graph_FloatTensor:$bias,
                       F64Attr:$epsilon, Optional<I64>:$seed,
                       Optional<Index>:$layer, Optional<Index>:$sample_offset,
                       Optional<Graph_IntTensor>:$dropout_keys,
                       OptionalAttr<F64Attr>:$probability,
                       OptionalAttr<StrAttr>:$purpose);
  let results = (outs Graph_FloatTensor:$sum, Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $residual `,` $scale `,` $bias `eps` $epsilon
    (`dropout` $seed^ `,` $layer `,` $sample_offset)? (`keys` $dropout_keys^)? attr-dict `:` type($input) `,` type($scale) (`keys` type($dropout_keys)^)?
  }];
  let hasVerifier = 1;
}
