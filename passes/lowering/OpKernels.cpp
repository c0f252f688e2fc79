//===- OpKernels.cpp - which kernel computes each graph op ----------------===//
//
// The op -> kernel table of ferry-select-kernels: for each graph op that
// computes, the kernel, its buffers in the kernel's order
// (operands, then results) and its integer and float parameters. Shapes
// become element counts and row lengths; seeds, layers and sample offsets
// stay affine in the registers.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelSelection.h"

#include "runtime/random/Philox.h"

#include <optional>

using namespace mlir;
using namespace ferry;
using namespace ferry::graph;
using namespace ferry::lowering;

namespace {

// Packed rows' operands, the kernels' optional last buffers in this order:
// the sequence ids and the dropout keys of the ops that take them.
SmallVector<Value> packedOperandsOf(Operation &op) {
  SmallVector<Value> values;
  auto add = [&](Value v) {
    if (v)
      values.push_back(v);
  };
  if (auto o = dyn_cast<SoftmaxOp>(op))
    add(o.getSequenceIds());
  if (auto o = dyn_cast<SoftmaxDropoutOp>(op))
    add(o.getSequenceIds()), add(o.getDropoutKeys());
  if (auto o = dyn_cast<AttentionOp>(op))
    add(o.getSequenceIds()), add(o.getDropoutKeys());
  if (auto o = dyn_cast<AttentionGradOp>(op))
    add(o.getSequenceIds()), add(o.getDropoutKeys());
  if (auto o = dyn_cast<DropoutOp>(op))
    add(o.getDropoutKeys());
  if (auto o = dyn_cast<DropoutSoftmaxGradOp>(op))
    add(o.getDropoutKeys());
  if (auto o = dyn_cast<ResidualLayerNormOp>(op))
    add(o.getDropoutKeys());
  return values;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

} // namespace

LogicalResult KernelSelection::selectKernel(Operation &op, Frame &f) {
  auto R = [&](Value v) { return ref(f, v, &op); };
  auto out = [&](Value v) {
    Ref r = temp(v.getType());
    f.refs[v] = r;
    return r;
  };
  // Kernels. Operands first (all must have buffers), then the result.
  // Packed rows' sequence ids and dropout keys are the kernels' optional
  // last buffers, after the results (and any workspace).
  SmallVector<Value> packedOperands = packedOperandsOf(op);
  SmallVector<Ref> ins;
  for (Value v : op.getOperands()) {
    if (!isa<RankedTensorType>(v.getType()) ||
        llvm::is_contained(packedOperands, v))
      continue;
    FailureOr<Ref> r = R(v);
    if (failed(r))
      return failure();
    ins.push_back(*r);
  }
  SmallVector<Ref> outs;
  for (Value r : op.getResults()) {
    if (!isa<RankedTensorType>(r.getType()))
      return op.emitOpError() << "ferry-lower-to-rt has no kernel for this op";
    outs.push_back(out(r));
  }
  SmallVector<Ref> packed;
  for (Value v : packedOperands) {
    FailureOr<Ref> r = R(v);
    if (failed(r))
      return failure();
    packed.push_back(*r);
  }
  auto all = [&]() {
    SmallVector<Ref> v(ins);
    v.append(outs.begin(), outs.end());
    if (!isa<AttentionGradOp>(op)) // after attention_grad's workspace
      v.append(packed.begin(), packed.end());
    return v;
  };
  Value r0 = op.getNumResults() ? op.getResult(0) : Value();

  if (isa<AddOp, SubOp, MulOp, DivOp>(op)) {
    StringRef k = isa<AddOp>(op)   ? "add"
                  : isa<SubOp>(op) ? "sub"
                  : isa<MulOp>(op) ? "mul"
                                   : "div";
    emit(k, all(), {numElements(r0.getType())});
  } else if (auto s = dyn_cast<ScaleOp>(op)) {
    emit("scale", all(), {numElements(r0.getType())},
         {s.getFactor().convertToDouble()});
  } else if (isa<GeluOp>(op)) {
    emit("gelu", all(), {numElements(r0.getType())});
  } else if (isa<GeluGradOp>(op)) {
    emit("gelu_grad", all(), {numElements(r0.getType())});
  } else if (isa<TanhOp>(op)) {
    emit("tanh", all(), {numElements(r0.getType())});
  } else if (isa<TanhGradOp>(op)) {
    emit("tanh_grad", all(), {numElements(r0.getType())});
  } else if (isa<MatmulOp, FusedMatmulOp>(op)) {
    selectMatmul(op, ins, outs);
  } else if (isa<BiasAddOp>(op)) {
    int64_t cols = shapeOf(r0).back();
    emit("bias_add", all(), {numElements(r0.getType()) / cols, cols});
  } else if (auto rln = dyn_cast<ResidualLayerNormOp>(op)) {
    ArrayRef<int64_t> shape = shapeOf(r0);
    int64_t n = numElements(r0.getType()), cols = shape.back();
    // As graph.dropout: the leading dimension is the sample.
    int64_t perSample = shape.empty() ? n : n / shape.front();
    SmallVector<int64_t> ints = {n / cols, cols, n, perSample, 0, 0, 0, 0};
    double p = 0.0;
    Instr &in = emit("residual_layer_norm", all(), ints,
                     {rln.getEpsilon().convertToDouble(), 0.0});
    if (rln.getSeed()) {
      FailureOr<Affine> seed = affine(f, rln.getSeed(), &op);
      FailureOr<Affine> layer = affine(f, rln.getLayer(), &op);
      FailureOr<Affine> offset = affine(f, rln.getSampleOffset(), &op);
      if (failed(seed) || failed(layer) || failed(offset))
        return failure();
      in.ints[4] = *seed;
      in.ints[5] = Affine::constant(
          static_cast<int64_t>(random::purposeHash(*rln.getPurpose())));
      in.ints[6] = *layer;
      in.ints[7] = *offset;
      p = rln.getProbability()->convertToDouble();
    }
    in.floats[1] = p;
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    int64_t cols = shapeOf(r0).back();
    emit("layer_norm", all(), {numElements(r0.getType()) / cols, cols},
         {ln.getEpsilon().convertToDouble()});
  } else if (auto lng = dyn_cast<LayerNormGradOp>(op)) {
    int64_t cols = shapeOf(r0).back();
    int64_t rows = numElements(r0.getType()) / cols;
    SmallVector<Ref> bufs = all();
    // The row statistics the CUDA column pass reads (planned, so that no
    // kernel allocates and the step can be captured as a CUDA graph).
    bufs.push_back(workspace(8 * rows, "layer_norm_grad rows"));
    emit("layer_norm_grad", bufs, {rows, cols},
         {lng.getEpsilon().convertToDouble()});
  } else if (auto sm = dyn_cast<SoftmaxOp>(op)) {
    ArrayRef<int64_t> s = shapeOf(r0);
    int64_t cols = s.back(), batch = s.front();
    emit("softmax", all(),
         {batch, numElements(r0.getType()) / (batch * cols), cols});
  } else if (isa<SoftmaxGradOp>(op)) {
    int64_t cols = shapeOf(r0).back();
    emit("softmax_grad", all(), {numElements(r0.getType()) / cols, cols});
  } else if (isa<DropoutOp, SoftmaxDropoutOp, DropoutSoftmaxGradOp>(op)) {
    return selectDropout(op, f, all());
  } else if (isa<AttentionOp, AttentionGradOp>(op)) {
    return selectAttention(op, f, all());
  } else if (auto e = dyn_cast<EmbeddingOp>(op)) {
    ArrayRef<int64_t> t = shapeOf(e.getTable());
    emit("embedding", all(), {numElements(e.getIds().getType()), t[1], t[0]});
  } else if (auto e = dyn_cast<EmbeddingGradOp>(op)) {
    ArrayRef<int64_t> t = shapeOf(r0);
    std::swap(ins[0], ins[1]); // the kernel takes [ids, dy, dtable]
    int64_t rows = numElements(e.getIds().getType());
    // The CUDA backend sorts the rows by id (a stable radix sort) and sums
    // each id's rows in row order, as the CPU does: the same bits, run to
    // run, instead of float atomics.
    SmallVector<Ref> bufs = all();
    bufs.push_back(workspace(4 * (3 * rows + 256 * ((rows + 255) / 256)),
                             "embedding_grad sort"));
    emit("embedding_grad", bufs, {rows, t[1], t[0], 0});
  } else if (auto g = dyn_cast<GatherPositionsOp>(op)) {
    ArrayRef<int64_t> x = shapeOf(g.getInput()), p = shapeOf(g.getPositions());
    emit("gather_positions", all(), {x[0], x[1], p[1], x[2]});
  } else if (auto g = dyn_cast<GatherPositionsGradOp>(op)) {
    ArrayRef<int64_t> x = shapeOf(r0), p = shapeOf(g.getPositions());
    std::swap(ins[0], ins[1]); // the kernel takes [positions, dy, dx]
    emit("gather_positions_grad", all(), {x[0], x[1], p[1], x[2]});
  } else if (isa<TakeOp, TakeGradOp>(op)) {
    bool grad = isa<TakeGradOp>(op);
    ArrayRef<int64_t> x = grad ? shapeOf(r0) : shapeOf(op.getOperand(0));
    auto dim =
        static_cast<int64_t>(op.getAttrOfType<IntegerAttr>("dim").getInt());
    auto index =
        static_cast<int64_t>(op.getAttrOfType<IntegerAttr>("index").getInt());
    emit(grad ? "take_grad" : "take", all(),
         {product(x.take_front(dim)), x[dim], product(x.drop_front(dim + 1)),
          index});
  } else if (auto t = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> x = shapeOf(t.getInput());
    if (x.size() > 6)
      return op.emitOpError() << "transposes of rank > 6 are not lowered";
    SmallVector<int64_t> ints = {static_cast<int64_t>(x.size())};
    ints.append(x.begin(), x.end());
    ints.append(t.getPermutation().begin(), t.getPermutation().end());
    emit("transpose", all(), ints);
  } else if (isa<ReduceOp, BroadcastOp>(op)) {
    bool reduce = isa<ReduceOp>(op);
    ArrayRef<int64_t> full = reduce ? shapeOf(op.getOperand(0)) : shapeOf(r0);
    ArrayRef<int64_t> dims =
        op.getAttrOfType<DenseI64ArrayAttr>("dims").asArrayRef();
    for (size_t i = 1; i < dims.size(); ++i)
      if (dims[i] != dims[i - 1] + 1)
        return op.emitOpError() << "ferry-lower-to-rt needs contiguous "
                                   "dimensions to reduce or broadcast";
    int64_t first = dims.empty() ? 0 : dims.front();
    int64_t count = static_cast<int64_t>(dims.size());
    int64_t outer = product(full.take_front(first));
    int64_t size = product(full.slice(first, count));
    int64_t inner = product(full.drop_front(first + count));
    if (reduce)
      emit("reduce", all(),
           {static_cast<int64_t>(cast<ReduceOp>(op).getKind()), outer, size,
            inner});
    else
      emit("broadcast", all(), {outer, size, inner});
  } else if (isa<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp,
                 ArgmaxCorrectOp>(op)) {
    ArrayRef<int64_t> logits = shapeOf(op.getOperand(0));
    int64_t cols = logits.back();
    StringRef k = isa<SoftmaxCrossEntropyOp>(op) ? "softmax_cross_entropy"
                  : isa<SoftmaxCrossEntropyGradOp>(op)
                      ? "softmax_cross_entropy_grad"
                      : "argmax_correct";
    int64_t rows = product(logits) / cols;
    SmallVector<Ref> bufs = all();
    // The sums: per-row values (doubles), added in a fixed order.
    if (!isa<SoftmaxCrossEntropyGradOp>(op))
      bufs.push_back(workspace(8 * rows, (k + " rows").str()));
    emit(k, bufs,
         {rows, cols, op.getAttrOfType<IntegerAttr>("num_classes").getInt()});
  } else if (auto am = dyn_cast<AttentionMaskOp>(op)) {
    emit("attention_mask", all(), {numElements(r0.getType())},
         {am.getFill().convertToDouble()});
  } else if (auto io = dyn_cast<IotaOp>(op)) {
    ArrayRef<int64_t> s = shapeOf(r0);
    auto dim = static_cast<int64_t>(io.getDim());
    emit("iota", all(),
         {product(s.take_front(dim)), s[dim], product(s.drop_front(dim + 1))});
  } else if (auto gn = dyn_cast<GlobalNormOp>(op)) {
    SmallVector<int64_t> counts;
    for (Value v : gn.getInputs())
      counts.push_back(numElements(v.getType()));
    emit("global_norm", all(), counts);
  } else if (auto lr = dyn_cast<LearningRateOp>(op)) {
    FailureOr<Affine> step = affine(f, lr.getStep(), &op);
    if (failed(step))
      return failure();
    Instr &in =
        emit("learning_rate", all(),
             {lr.getKind() == "poly" ? 0 : 1,
              static_cast<int64_t>(lr.getWarmupSteps()),
              static_cast<int64_t>(lr.getStartWarmupStep()),
              static_cast<int64_t>(lr.getTotalSteps())},
             {lr.getLr().convertToDouble(), lr.getPower().convertToDouble()});
    in.ints.push_back(*step);
  } else if (auto up = dyn_cast<OptimizerUpdateOp>(op)) {
    return selectOptimizerUpdate(up, f, ins);
  } else if (auto ar = dyn_cast<AllReduceOp>(op)) {
    emit("all_reduce", all(),
         {numElements(r0.getType()), static_cast<int64_t>(ar.getReplicas())});
  } else if (isa<ReduceScatterOp, AllGatherOp>(op)) {
    // The whole tensor's side is padded to replicas * shard elements in a
    // workspace when the shards do not divide it.
    bool scatter = isa<ReduceScatterOp>(op);
    int64_t replicas =
        static_cast<int64_t>(scatter ? cast<ReduceScatterOp>(op).getReplicas()
                                     : cast<AllGatherOp>(op).getReplicas());
    Value whole = scatter ? op.getOperand(0) : r0;
    Value shard = scatter ? r0 : op.getOperand(0);
    int64_t count = numElements(whole.getType());
    int64_t shardCount = numElements(shard.getType());
    SmallVector<Ref> bufs = all();
    if (count < shardCount * replicas)
      bufs.push_back(
          temp(RankedTensorType::get({shardCount * replicas},
                                     Float32Type::get(op.getContext())),
               "padded collective workspace"));
    emit(scatter ? "reduce_scatter" : "all_gather", bufs,
         {count, shardCount, replicas});
  } else {
    return op.emitOpError() << "ferry-lower-to-rt has no kernel for this op";
  }
  return success();
}

// gemm / gemm_epilogue: C = alpha * op(A) op(B) [+ bias | bias gradient].
void KernelSelection::selectMatmul(Operation &op, ArrayRef<Ref> ins,
                                   ArrayRef<Ref> outs) {
  Value r0 = op.getResult(0);
  auto fused = dyn_cast<FusedMatmulOp>(op);
  bool transA =
      fused ? fused.getTransposeLhs() : cast<MatmulOp>(op).getTransposeLhs();
  bool transB =
      fused ? fused.getTransposeRhs() : cast<MatmulOp>(op).getTransposeRhs();
  ArrayRef<int64_t> a = shapeOf(op.getOperand(0)),
                    b = shapeOf(op.getOperand(1)), c = shapeOf(r0);
  int64_t m = c[c.size() - 2], n = c.back();
  int64_t k = transA ? a[a.size() - 2] : a.back();
  int64_t batch = product(c.drop_back(2));
  bool shared = b.size() == 2 && c.size() > 2;
  if (shared && !transA) {
    // A weight shared by every batch entry, entries contiguous: one GEMM
    // of batch * m rows (what a linear layer over [batch, seq] is).
    m *= batch;
    batch = 1;
    shared = false;
  }
  // gemm: [a, b, c]; gemm_epilogue: [a, b, c, bias or bias gradient].
  int epilogue = fused && fused.getBias()       ? 1
                 : fused && fused.getBiasGrad() ? 2
                                                : 0;
  SmallVector<Ref> bufs = {ins[0], ins[1], outs[0]};
  if (epilogue == 1)
    bufs.push_back(ins[2]);
  if (epilogue == 2)
    bufs.push_back(outs[1]);
  SmallVector<int64_t> ints = {
      batch, m, n, k, transA ? 1 : 0, transB ? 1 : 0, m * k, shared ? 0 : k * n,
      m * n, 0};
  bool rounded = matmulInputs != MatmulPrecision::fp32;
  if (rounded || gemmWorkspace > 0 || epilogue) {
    // training.precision: bf16: the inputs are rounded to bf16 and the
    // products accumulated in fp32; the rounded copies need a workspace,
    // planned like any temporary (4 bytes per input element: the CPU
    // backend keeps them as fp32, the CUDA backend as bf16). After them,
    // `gemmWorkspace` bytes of scratch for cuBLASLt (CUDA backend), which
    // ferry-place-buffers shrinks under a small budget.
    int64_t elements =
        !rounded ? 0 : batch * m * k + (shared ? k * n : batch * k * n);
    int64_t bytes = 4 * elements + gemmWorkspace;
    if (bytes > 0) {
      Ref w =
          temp(Type(), rounded ? "bf16 matmul workspace" : "gemm workspace");
      program.buffers[w.buffer].bytes = w.bytes = bytes;
      program.buffers[w.buffer].scratch = gemmWorkspace;
      bufs.push_back(w);
    }
    ints.push_back(static_cast<int64_t>(matmulInputs));
  }
  if (epilogue)
    ints.push_back(epilogue);
  double alpha = fused ? fused.getAlpha().convertToDouble() : 1.0;
  emit(epilogue ? "gemm_epilogue" : "gemm", bufs, ints, {alpha});
}

// dropout, softmax_dropout, dropout_softmax_grad.
LogicalResult KernelSelection::selectDropout(Operation &op, Frame &f,
                                             ArrayRef<Ref> all) {
  Value r0 = op.getResult(0);
  // Dropout's ints [count, per_sample, seed, purpose, layer, offset], after
  // the softmax's (softmax_dropout) or softmax_grad's.
  unsigned s = isa<DropoutOp>(op) ? 1 : 2; // the seed operand
  FailureOr<Affine> seed = affine(f, op.getOperand(s), &op);
  FailureOr<Affine> layer = affine(f, op.getOperand(s + 1), &op);
  FailureOr<Affine> offset = affine(f, op.getOperand(s + 2), &op);
  if (failed(seed) || failed(layer) || failed(offset))
    return failure();
  int64_t n = numElements(r0.getType());
  ArrayRef<int64_t> shape = shapeOf(r0);
  int64_t perSample = shape.empty() ? n : n / shape.front();
  int64_t cols = shape.empty() ? 1 : shape.back();
  SmallVector<int64_t> ints;
  StringRef kernel = "dropout";
  if (isa<SoftmaxDropoutOp>(op)) {
    kernel = "softmax_dropout";
    ints = {shape.front(), n / (shape.front() * cols), cols};
  } else if (isa<DropoutSoftmaxGradOp>(op)) {
    kernel = "dropout_softmax_grad";
    ints = {n / cols, cols};
  }
  size_t first = ints.size();
  ints.append({n, perSample, 0,
               static_cast<int64_t>(random::purposeHash(
                   op.getAttrOfType<StringAttr>("purpose").getValue()))});
  Instr &in =
      emit(kernel, all, ints,
           {op.getAttrOfType<FloatAttr>("probability").getValueAsDouble()});
  in.ints[first + 2] = *seed;
  in.ints.push_back(*layer);
  in.ints.push_back(*offset);
  // Packed rows' dropout keys: the layout of a sample (a token's elements,
  // or the attention probabilities [heads, seq, seq]) and the tokens a row.
  auto dropout = dyn_cast<DropoutOp>(op);
  if (dropout && dropout.getDropoutKeys()) {
    int64_t seq = shapeOf(dropout.getDropoutKeys())[1];
    bool probabilities =
        shape.size() == 4 && shape[2] == seq && shape[3] == seq;
    in.ints.push_back(Affine::constant(probabilities ? 2 : 1));
    in.ints.push_back(Affine::constant(seq));
  }
  return success();
}

// attention [q, k, v, mask, out, lse, (sequence_ids, dropout_keys)];
// attention_grad [q, k, v, mask, out, lse, dout, dq, dk, dv, workspace,
// (sequence_ids, dropout_keys)]. ints [batch, heads, seq, head_dim,
// seed, purpose, layer, sample_offset, precision, sequence_major], floats
// [scale, p].
LogicalResult KernelSelection::selectAttention(Operation &op, Frame &f,
                                               ArrayRef<Ref> all) {
  bool grad = isa<AttentionGradOp>(op);
  unsigned s = grad ? 7 : 4; // the seed operand
  FailureOr<Affine> seed = affine(f, op.getOperand(s), &op);
  FailureOr<Affine> layer = affine(f, op.getOperand(s + 1), &op);
  FailureOr<Affine> offset = affine(f, op.getOperand(s + 2), &op);
  if (failed(seed) || failed(layer) || failed(offset))
    return failure();
  ArrayRef<int64_t> q = shapeOf(op.getOperand(0));
  bool sequenceMajor = op.hasAttr("sequence_major");
  SmallVector<Ref> bufs(all.begin(), all.end());
  if (grad) { // each query row's dout . out
    bufs.push_back(workspace(4 * q[0] * q[1] * q[2], "attention_grad rows"));
    for (Value v : packedOperandsOf(op)) {
      FailureOr<Ref> r = ref(f, v, &op);
      if (failed(r))
        return failure();
      bufs.push_back(*r);
    }
  }
  int64_t purpose = static_cast<int64_t>(
      random::purposeHash(op.getAttrOfType<StringAttr>("purpose").getValue()));
  // bf16 products where the GEMMs round to bf16; fp32 otherwise (fp16
  // leaves attention unfused: ferry-fuse-attention does not run).
  int64_t precision = matmulInputs == MatmulPrecision::bf16 ? 1 : 0;
  Instr &in =
      emit(grad ? "attention_grad" : "attention", bufs,
           {q[0], sequenceMajor ? q[2] : q[1], sequenceMajor ? q[1] : q[2],
            q[3], 0, purpose, 0, 0, precision, sequenceMajor ? 1 : 0},
           {op.getAttrOfType<FloatAttr>("scale").getValueAsDouble(),
            op.getAttrOfType<FloatAttr>("probability").getValueAsDouble()});
  in.ints[4] = *seed;
  in.ints[6] = *layer;
  in.ints[7] = *offset;
  return success();
}

// One parameter's AdamW / LAMB step (one layer's entry under phases).
LogicalResult KernelSelection::selectOptimizerUpdate(OptimizerUpdateOp up,
                                                     Frame &f,
                                                     ArrayRef<Ref> ins) {
  Operation &op = *up;
  FailureOr<Affine> step = affine(f, up.getStep(), &op);
  if (failed(step))
    return failure();
  auto param = symbols.lookup<ParameterOp>(up.getParam());
  RankedTensorType t = param.getTensorType();
  int64_t segments = param.getStacked() ? t.getDimSize(0) : 1;
  SmallVector<Ref> bufs = {stateRef(up.getParam()), stateRef(up.getGrad()),
                           stateRef(up.getM()), stateRef(up.getV())};
  int64_t count = t.getNumElements() / segments;
  if (up.getLayer()) { // one layer's entry (phased execution)
    FailureOr<Affine> layer = affine(f, up.getLayer(), &op);
    if (failed(layer))
      return failure();
    int64_t entryBytes = bufs[0].bytes / segments;
    for (Ref &r : bufs) {
      r.offset = *layer * entryBytes;
      r.bytes = entryBytes;
    }
    segments = 1;
  }
  std::optional<uint64_t> shards = up.getShardReplicas();
  if (up.getOptimizer() == "lamb" && shards && *shards > 1) {
    // Shards of N replicas: LAMB's two passes around an all-reduce of each
    // segment's sums of w^2 and u^2, so the trust ratio is the whole
    // tensor's.
    Ref sums = temp(RankedTensorType::get({2 * segments},
                                          Float32Type::get(op.getContext())),
                    "LAMB norm sums");
    SmallVector<Ref> first = {bufs[0], bufs[1], bufs[2], bufs[3], ins[1], sums};
    SmallVector<Ref> second = {bufs[0], bufs[2], bufs[3], ins[0], ins[1], sums};
    if (ins.size() > 2) { // the loss scale
      first.push_back(ins[2]);
      second.push_back(ins[2]);
    }
    double b1 = up.getBeta1().convertToDouble(),
           b2 = up.getBeta2().convertToDouble(),
           eps = up.getEpsilon().convertToDouble(),
           wd = up.getWeightDecay().convertToDouble();
    emit("lamb_moments", first, {count, segments, 0},
         {b1, b2, eps, wd, up.getClipNorm().convertToDouble()})
        .ints[2] = *step;
    emit("all_reduce", {sums, sums},
         {2 * segments, static_cast<int64_t>(*shards)});
    emit("lamb_apply", second, {count, segments, 0}, {b1, b2, eps, wd})
        .ints[2] = *step;
    return success();
  }
  bufs.append(ins.begin(), ins.end()); // lr, norm
  Instr &in = emit(
      "optimizer_update", bufs,
      {count, segments, 0, up.getOptimizer() == "lamb" ? 1 : 0},
      {up.getBeta1().convertToDouble(), up.getBeta2().convertToDouble(),
       up.getEpsilon().convertToDouble(), up.getWeightDecay().convertToDouble(),
       up.getClipNorm().convertToDouble()});
  in.ints[2] = *step;
  return success();
}
