//===- GraphClassSplitOps.td - losses over split classes ------*- tablegen -*-===//
//
// The softmax cross-entropy and the argmax metric of logits whose classes
// are split over the tensor-parallel group (the tied MLM head when the word
// embedding is vocabulary-parallel), computed from per-row maxima and sums
// over the group without gathering the logits (Megatron's vocabulary-
// parallel cross-entropy). ferry-partition-tensors builds them from
// graph.softmax_cross_entropy and graph.argmax_correct; the collectives
// between them are graph.all_reduce over the tensor group:
//
//   m  = all_reduce max (class_max logits)           no gradient: the loss
//   s  = all_reduce sum (class_stats logits, labels, m)   does not depend on m
//   loss = cross_entropy_of_stats s, m, weights
//   correct = index_correct (all_reduce max (class_argmax logits, m)), labels
//
// Each op's logits are this rank's [..., cols] part; its classes start at
// the global class tensor rank x `tensor_class_stride` (the rank is the
// backend's, at run time: one executable serves every rank). Classes at or
// beyond `num_classes` (the padded vocabulary) take no part. Included from
// GraphOps.td; verifiers and gradient rules in GraphClassSplit.cpp.
//
//===----------------------------------------------------------------------===//

def Graph_ClassMaxOp : Graph_Op<"class_max", [Pure]> {
  let summary = "each row's maximum over this rank's real classes";
  let description = [{
    `result[i] = max(logits[i, c])` over this rank's classes `c` whose global
    index is below `num_classes`, and -inf for a rank with none. The max
    all-reduce of it over the tensor group is the whole row's maximum (the
    softmax's shift). Not differentiable: the losses built on it do not
    depend on its value.

    ```mlir
    %m = graph.class_max %logits classes 1000 stride 504 : tensor<8x20x504xf32> -> tensor<8x20xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, I64Attr:$num_classes,
                       I64Attr:$tensor_class_stride);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `classes` $num_classes `stride` $tensor_class_stride attr-dict
    `:` type($logits) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_ClassStatsOp : Graph_Op<"class_stats", [Pure, Graph_Differentiable]> {
  let summary = "each row's sum of exponentials and target logit over this rank's classes";
  let description = [{
    `result[i, 0] = sum(exp(logits[i, c] - row_max[i]))` over this rank's
    real classes, and `result[i, 1] = logits[i, labels[i] - offset]` when
    the label is one of this rank's classes (0 otherwise), with `offset` the
    global index of the rank's first class. Summed over the tensor group,
    they give each row's softmax denominator and target logit. A label
    outside `[0, num_classes)` is an error at run time.

    Gradient (with respect to the logits; `row_max` has none: the loss
    built on it does not depend on it):
    `dlogits[i, c] = grad[i, 0] * exp(logits[i, c] - row_max[i]) +
    grad[i, 1] * [c == labels[i] - offset]`, 0 for padded classes.

    ```mlir
    %s = graph.class_stats %logits, %labels, %m classes 1000 stride 504
        : tensor<8x20x504xf32>, tensor<8x20xi32>, tensor<8x20xf32> -> tensor<8x20x2xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IntTensor:$labels,
                       Graph_FloatTensor:$row_max, I64Attr:$num_classes,
                       I64Attr:$tensor_class_stride);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $row_max `classes` $num_classes `stride`
    $tensor_class_stride attr-dict `:` type($logits) `,` type($labels) `,`
    type($row_max) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_ClassStatsGradOp : Graph_Op<"class_stats_grad",
    [Pure, AllTypesMatch<["logits", "result"]>]> {
  let summary = "gradient of graph.class_stats with respect to the logits";
  let description = [{
    `result[i, c] = grad[i, 0] * exp(logits[i, c] - row_max[i]) +
    grad[i, 1] * [c == labels[i] - offset]` over this rank's real classes,
    0 for padded ones.

    ```mlir
    %dl = graph.class_stats_grad %logits, %labels, %m, %ds classes 1000 stride 504
        : tensor<8x20x504xf32>, tensor<8x20xi32>, tensor<8x20xf32>, tensor<8x20x2xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IntTensor:$labels,
                       Graph_FloatTensor:$row_max, Graph_FloatTensor:$grad,
                       I64Attr:$num_classes, I64Attr:$tensor_class_stride);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $row_max `,` $grad `classes` $num_classes `stride`
    $tensor_class_stride attr-dict `:` type($logits) `,` type($labels) `,`
    type($row_max) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def Graph_CrossEntropyOfStatsOp : Graph_Op<"cross_entropy_of_stats",
    [Pure, Graph_Differentiable]> {
  let summary = "weighted sum of cross-entropies from each row's softmax sums";
  let description = [{
    `result = sum_i weights[i] * (log(stats[i, 0]) + row_max[i] - stats[i, 1])`
    over the rows of nonzero weight: graph.softmax_cross_entropy's value,
    from the group's sums of graph.class_stats and the whole rows' maxima.

    Gradient (with respect to `stats`; `row_max` has none):
    `dstats[i] = (grad * weights[i] / stats[i, 0], -grad * weights[i])`.

    ```mlir
    %l = graph.cross_entropy_of_stats %s, %m, %w
        : tensor<8x20x2xf32>, tensor<8x20xf32>, tensor<8x20xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$stats, Graph_FloatTensor:$row_max,
                       Graph_FloatTensor:$weights);
  let results = (outs Graph_FloatScalar:$result);
  let assemblyFormat = [{
    $stats `,` $row_max `,` $weights attr-dict `:` type($stats) `,`
    type($row_max) `,` type($weights) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_CrossEntropyOfStatsGradOp : Graph_Op<"cross_entropy_of_stats_grad",
    [Pure, AllTypesMatch<["stats", "result"]>]> {
  let summary = "gradient of graph.cross_entropy_of_stats with respect to the stats";
  let description = [{
    `result[i] = (grad * weights[i] / stats[i, 0], -grad * weights[i])`, 0
    for rows of weight 0.

    ```mlir
    %ds = graph.cross_entropy_of_stats_grad %s, %w, %g
        : tensor<8x20x2xf32>, tensor<8x20xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$stats, Graph_FloatTensor:$weights,
                       Graph_FloatScalar:$grad);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $stats `,` $weights `,` $grad attr-dict `:` type($stats) `,`
    type($weights) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def Graph_ClassArgmaxOp : Graph_Op<"class_argmax", [Pure]> {
  let summary = "minus each row's first global class index that holds the row's maximum";
  let description = [{
    `result[i] = -c` for this rank's first real class `c` (global index)
    whose logit equals `row_max[i]` (the whole row's maximum) or is NaN, and
    -inf for a rank with none. Negated so that the max all-reduce over the
    tensor group gives minus the lowest such class: graph.argmax_correct's
    choice (ties to the lowest class). Float holds the indices exactly (the
    verifier bounds `num_classes` by 2^24). A metric: not differentiable.

    ```mlir
    %a = graph.class_argmax %logits, %m classes 1000 stride 504
        : tensor<8x20x504xf32>, tensor<8x20xf32> -> tensor<8x20xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_FloatTensor:$row_max,
                       I64Attr:$num_classes, I64Attr:$tensor_class_stride);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $row_max `classes` $num_classes `stride` $tensor_class_stride
    attr-dict `:` type($logits) `,` type($row_max) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_IndexCorrectOp : Graph_Op<"index_correct", [Pure]> {
  let summary = "weighted count of rows whose chosen class is the label";
  let description = [{
    `result = sum_i weights[i] * [-negated_index[i] == labels[i]]`: the
    numerator of the masked-LM accuracy from graph.class_argmax's
    all-reduced result. A label outside `[0, num_classes)` is an error at run
    time, as graph.argmax_correct's. A metric: not differentiable.

    ```mlir
    %c = graph.index_correct %a, %labels, %w classes 1000
        : tensor<8x20xf32>, tensor<8x20xi32>, tensor<8x20xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$negated_index,
                       Graph_IntTensor:$labels, Graph_FloatTensor:$weights,
                       I64Attr:$num_classes);
  let results = (outs Graph_FloatScalar:$result);
  let assemblyFormat = [{
    $negated_index `,` $labels `,` $weights `classes` $num_classes attr-dict
    `:` type($negated_index) `,` type($labels) `,` type($weights) `->`
    type($result)
  }];
  let hasVerifier = 1;
}
