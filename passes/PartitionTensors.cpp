//===- PartitionTensors.cpp - this rank's part of a tensor-parallel model -===//
//
// ferry-partition-tensors (execution.tensor_parallel > 1), right after
// ferry-shard-parameters and before autodiff. The module holds the whole
// model and its parameters' splits (#graph.sharding on the declarations);
// this pass propagates the splits forward through every function an entry
// reaches (into called functions, the layer loop's body included), gives
// each split value this rank's shape, and inserts the collectives where
// shardings meet (Megatron's conjugate operators):
//
// * a replicated value entering a matmul whose weight is split along its
//   output dimension (column-parallel) passes through graph.copy_to_group
//   (f: identity forward, all-reduce backward), one per value; the result
//   is split along its last dimension;
// * a matmul whose operands are both split along the contracted dimension
//   (row-parallel) gives each rank a partial sum: it is all-reduced over the
//   tensor group at once (g: all-reduce forward, identity backward), so the
//   bias after it is added once, to the sum;
// * element-wise ops, bias adds, the softmax over the keys and matmuls over
//   a split batch dimension (the attention heads) keep the split; reshapes
//   and transposes move it to the dimension its elements land in;
// * a dropout of a split tensor keys each element by its place in the whole
//   one (tensor_key_stride), so masks equal one process's;
// * an embedding lookup in a table split along its rows (the
//   vocabulary-parallel word embedding) gives zeros for the other ranks'
//   ids (tensor_row_stride) and is all-reduced at once (g);
// * the softmax cross-entropy and argmax metric of logits split along their
//   classes (the tied MLM head) become the ops of GraphClassSplitOps.td
//   around a max and a sum all-reduce: the logits are never gathered.
//
// With sequence parallelism, the activations between the layers' matmuls
// are split along the sequence instead (PartitionSequence.cpp); the
// vocabulary-parallel rules are PartitionVocabulary.cpp's.
//
// Autodiff then derives the backward's collectives from f and g. A split
// value reaching an op without a rule here (a layer norm of a split
// hidden dimension; a function's result or a loop's carried value split
// other than along the sequence) is an error naming the op and the split:
// the layout would need a collective ferry does not insert.
//
//===----------------------------------------------------------------------===//
#include "passes/Partitioner.h"
#include "passes/Passes.h"

#include "dialects/graph/GraphAttributes.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace ferry {
#define GEN_PASS_DEF_PARTITIONTENSORSPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry::graph;
using namespace ferry::partition;

namespace {

struct PartitionTensorsPass
    : public ferry::impl::PartitionTensorsPassBase<PartitionTensorsPass> {
  using PartitionTensorsPassBase::PartitionTensorsPassBase;
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

} // namespace

RankedTensorType ferry::partition::localType(RankedTensorType type, int64_t dim,
                                             int64_t parts) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= parts;
  return RankedTensorType::get(shape, type.getElementType());
}

void Partitioner::setSplit(Value v, int64_t dim) {
  split[v] = dim;
  v.setType(localType(cast<RankedTensorType>(v.getType()), dim, parts));
}

Value Partitioner::copyToGroup(Value v) {
  auto it = entering.find(v);
  if (it != entering.end())
    return it->second;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfterValue(v);
  Value f = CopyToGroupOp::create(
      builder, v.getLoc(), v.getType(), v, builder.getI64IntegerAttr(parts),
      MeshAxisAttr::get(builder.getContext(), MeshAxis::tensor));
  entering[v] = f;
  return f;
}

Value Partitioner::allReduce(Value v, ReduceKind kind) {
  return AllReduceOp::create(
      builder, v.getLoc(), v.getType(), v, builder.getI64IntegerAttr(parts),
      MeshAxisAttr::get(builder.getContext(), MeshAxis::tensor),
      kind == ReduceKind::sum
          ? ReduceKindAttr()
          : ReduceKindAttr::get(builder.getContext(), kind));
}

void Partitioner::sumPartial(Value partial) {
  if (sequenceParallel && isSequenceShaped(partial)) {
    reduceScatterSequence(partial);
    return;
  }
  builder.setInsertionPointAfterValue(partial);
  Value sum = allReduce(partial, ReduceKind::sum);
  partial.replaceAllUsesExcept(sum, sum.getDefiningOp());
}

InFlightDiagnostic Partitioner::noRule(Operation *op, Value operand) {
  return op->emitOpError()
         << "has an operand " << describe(operand)
         << " over the tensor group, and ferry-partition-tensors has no rule "
            "for it here; make the parameters it comes from replicated "
            "(execution.tensor_sharding)";
}

LogicalResult Partitioner::run() {
  for (ParameterOp decl : module.getOps<ParameterOp>())
    if (ShardingAttr s = decl.getShardingAttr())
      declSplit[decl.getSymName()] = s.getSplit();
  for (func::FuncOp f : module.getOps<func::FuncOp>())
    if (f->hasAttr(attrs::kEntry) && !f.isDeclaration()) {
      SmallVector<int64_t> args(f.getNumArguments(), kReplicated);
      if (failed(partitionFunction(f, args)))
        return failure();
    }
  // The declarations take this rank's shape last: the reads above checked
  // theirs against the whole one.
  for (ParameterOp decl : module.getOps<ParameterOp>())
    if (ShardingAttr s = decl.getShardingAttr())
      decl.setTypeAttr(
          TypeAttr::get(localType(decl.getTensorType(), s.getSplit(), parts)));
  MeshAttr mesh = meshOf(module);
  module->setAttr(attrs::kMesh,
                  MeshAttr::get(module.getContext(), mesh.getTensor(),
                                mesh.getData(), /*partitioned=*/true));
  return success();
}

LogicalResult Partitioner::partitionFunction(func::FuncOp f,
                                             ArrayRef<int64_t> args) {
  auto seen = done.find(f);
  if (seen != done.end()) {
    if (ArrayRef<int64_t>(seen->second) == args)
      return success();
    return f.emitOpError() << "is called with arguments split differently at "
                              "two calls; ferry-partition-tensors partitions "
                              "a function once";
  }
  done[f] = SmallVector<int64_t>(args);
  Block &entry = f.getBody().front();
  for (auto [arg, dim] : llvm::zip(entry.getArguments(), args))
    if (dim == kSequence)
      setSequence(arg);
    else if (dim != kReplicated)
      setSplit(arg, dim);
  if (failed(partitionBlock(entry)))
    return failure();
  auto ret = cast<func::ReturnOp>(f.getBody().back().getTerminator());
  SmallVector<int64_t> &out = results[f];
  for (OpOperand &operand : ret->getOpOperands()) {
    Value v = operand.get();
    // An entry's results are the run's: the whole sequence, its gradient
    // this rank's part.
    if (isSequence(v) && f->hasAttr(attrs::kEntry)) {
      operand.set(gatherSequence(v, /*replicatedGradient=*/true));
      v = operand.get();
    }
    if (splitOf(v) != kReplicated && !isSequence(v))
      return ret.emitOpError()
             << "returns a value " << describe(v)
             << " over the tensor group; ferry-partition-tensors keeps "
                "function results replicated (a row-parallel matmul's "
                "all-reduce makes them so) or, with sequence parallelism, "
                "split along the sequence";
    out.push_back(codeOf(v));
  }
  f.setType(FunctionType::get(f.getContext(), entry.getArgumentTypes(),
                              ret.getOperandTypes()));
  return success();
}

LogicalResult Partitioner::partitionBlock(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block))
    if (failed(partitionOp(&op)))
      return failure();
  return success();
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  // Reads of a split declaration: this rank's part.
  if (auto ref = dyn_cast<ParameterRefOp>(op)) {
    auto it = declSplit.find(ref.getName());
    if (it != declSplit.end())
      setSplit(ref.getResult(), it->second);
    return success();
  }
  if (auto slice = dyn_cast<ParameterSliceOp>(op)) {
    auto it = declSplit.find(slice.getName());
    if (it != declSplit.end())
      setSplit(slice.getResult(), it->second - 1);
    return success();
  }
  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (!callee || callee.isDeclaration())
      return call.emitOpError() << "calls a function without a body, which "
                                   "ferry-partition-tensors cannot follow";
    SmallVector<int64_t> args;
    for (Value v : call.getOperands())
      args.push_back(codeOf(v));
    if (failed(partitionFunction(callee, args)))
      return failure();
    for (auto [r, code] : llvm::zip(call.getResults(), results[callee]))
      if (code == kSequence)
        setSequence(r);
    return success();
  }
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    // With sequence parallelism the layer loop carries its hidden state
    // split along the sequence, cut to this rank's part on entry if it
    // comes in whole.
    for (auto [init, arg] :
         llvm::zip(loop.getInitArgsMutable(), loop.getRegionIterArgs())) {
      if (sequenceParallel && splitOf(init.get()) == kReplicated &&
          isSequenceShaped(init.get()))
        init.set(cutSequence(init.get()));
      if (isSequence(init.get()))
        setSequence(arg);
      else if (splitOf(init.get()) != kReplicated)
        return noRule(op, init.get());
    }
    if (failed(partitionBlock(*loop.getBody())))
      return failure();
    Operation *yield = loop.getBody()->getTerminator();
    for (auto [operand, arg, result] :
         llvm::zip(yield->getOpOperands(), loop.getRegionIterArgs(),
                   loop.getResults())) {
      Value v = operand.get();
      // A carry split along the sequence yielded whole: cut to the part.
      if (isSequence(arg) && splitOf(v) == kReplicated && isSequenceShaped(v))
        operand.set(v = cutSequence(v));
      if (isSequence(v) != isSequence(arg) ||
          (!isSequence(v) && splitOf(v) != kReplicated))
        return yield->emitOpError()
               << "carries a value " << describe(v) << " where the loop's "
               << (isSequence(arg) ? "argument is split along the sequence"
                                   : "argument is replicated")
               << "; ferry-partition-tensors carries a loop's values alike";
      if (isSequence(v))
        setSequence(result);
    }
    return success();
  }
  if (op->getNumRegions() != 0)
    return op->emitOpError()
           << "has regions, which ferry-partition-tensors does not enter";
  // Sequence parallelism: the ops with a rule for a part of the sequence;
  // any other op gets the whole sequence, gathered.
  if (sequenceParallel && !isa<MatmulOp, func::ReturnOp, scf::YieldOp>(op) &&
      llvm::any_of(op->getOperands(), [&](Value v) { return isSequence(v); })) {
    FailureOr<bool> done = partitionSequenceOp(op);
    if (failed(done))
      return failure();
    if (*done)
      return success();
    if (!isa<DropoutOp>(op))
      for (OpOperand &operand : op->getOpOperands())
        if (isSequence(operand.get()))
          operand.set(gatherSequence(operand.get(), true));
  }
  Value firstSplit;
  for (Value v : op->getOperands())
    if (splitOf(v) != kReplicated) {
      firstSplit = v;
      break;
    }
  // Matmuls may start a split from a replicated operand and a split weight;
  // every other op only carries one along.
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return firstSplit ? partitionMatmul(matmul) : success();
  if (!firstSplit)
    return success();
  if (isa<func::ReturnOp, scf::YieldOp>(op))
    return success(); // checked by the function and loop rules
  if (auto embedding = dyn_cast<EmbeddingOp>(op))
    return partitionEmbedding(embedding);
  if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(op))
    return partitionCrossEntropy(loss);
  if (auto metric = dyn_cast<ArgmaxCorrectOp>(op))
    return partitionArgmaxCorrect(metric);
  int64_t dim = splitOf(firstSplit);
  if (auto dropout = dyn_cast<DropoutOp>(op)) {
    // Each element's key is its place in the whole sample (dimension 0 is
    // the sample), so masks equal one process's: the rank's part must be
    // one block of the sample (every dimension between the sample's and the
    // split one of size 1), which starts at tensor rank x the part's size.
    // Packed rows key each element of the attention probabilities [batch,
    // heads, seq, seq] by (head, query, key): a split of the heads offsets
    // those keys alike; other packed keys cannot follow a split.
    auto type = cast<RankedTensorType>(dropout.getInput().getType());
    auto probabilities = [&](Value keys) {
      int64_t seq = cast<RankedTensorType>(keys.getType()).getDimSize(1);
      return type.getRank() == 4 && dim == 1 && type.getDimSize(2) == seq &&
             type.getDimSize(3) == seq;
    };
    if (splitOf(dropout.getInput()) == kReplicated || dim == 0 ||
        (dropout.getDropoutKeys() && !probabilities(dropout.getDropoutKeys())))
      return noRule(op, firstSplit);
    int64_t between = 1, part = 1;
    for (int64_t i = 1; i < type.getRank(); ++i) {
      if (i < dim)
        between *= type.getDimSize(i);
      part *= type.getDimSize(i); // this rank's shape already
    }
    if (between != 1)
      return noRule(op, firstSplit);
    dropout.setTensorKeyStrideAttr(builder.getI64IntegerAttr(part));
    if (isSequence(dropout.getInput()))
      setSequence(dropout.getResult());
    else
      setSplit(dropout.getResult(), dim);
    return success();
  }
  if (op->hasTrait<OpTrait::Elementwise>() ||
      isa<BiasAddOp, SoftmaxOp, ReshapeOp, TransposeOp>(op)) {
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      return partitionReshape(reshape);
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      ArrayRef<int64_t> perm = transpose.getPermutation();
      setSplit(transpose.getResult(),
               std::find(perm.begin(), perm.end(), dim) - perm.begin());
      return success();
    }
    if (auto bias = dyn_cast<BiasAddOp>(op)) {
      int64_t last = bias.getInput().getType().getRank() - 1;
      int64_t in = splitOf(bias.getInput()), b = splitOf(bias.getBias());
      if (!(in == last && b == 0) && !(in != last && b == kReplicated))
        return noRule(op, b == kReplicated ? bias.getInput() : bias.getBias());
      // A replicated bias of an input split along another dimension: each
      // rank's gradient of it is a partial sum, which f completes.
      if (in != last)
        bias.getBiasMutable().assign(copyToGroup(bias.getBias()));
      setSplit(bias.getResult(), in);
      return success();
    }
    if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
      int64_t rank = softmax.getInput().getType().getRank();
      // The mask is [batch, keys]: the split must be of another dimension.
      if (splitOf(softmax.getInput()) == kReplicated || dim == 0 ||
          dim == rank - 1 || splitOf(softmax.getMask()) != kReplicated)
        return noRule(op, firstSplit);
      setSplit(softmax.getResult(), dim);
      return success();
    }
    for (Value v : op->getOperands())
      if (splitOf(v) != dim)
        return noRule(op, splitOf(v) == kReplicated ? v : firstSplit);
    for (Value r : op->getResults())
      setSplit(r, dim);
    return success();
  }
  return noRule(op, firstSplit);
}

LogicalResult Partitioner::partitionMatmul(MatmulOp op) {
  int64_t rl = op.getLhs().getType().getRank();
  int64_t rr = op.getRhs().getType().getRank();
  int64_t lhsK = op.getTransposeLhs() ? rl - 2 : rl - 1;
  int64_t rhsK = op.getTransposeRhs() ? rr - 1 : rr - 2;
  int64_t rhsN = op.getTransposeRhs() ? rr - 2 : rr - 1;
  int64_t sl = splitOf(op.getLhs()), sr = splitOf(op.getRhs());
  int64_t rank = op.getResult().getType().getRank();
  if (isSequence(op.getLhs())) {
    // The whole sequence: for a column-parallel weight in place of f (the
    // gather's gradient sums the partial ones), else for a replicated
    // product.
    bool columns = sr == rhsN;
    op.getLhsMutable().assign(gatherSequence(op.getLhs(), !columns));
    if (!columns)
      return sr == kReplicated ? success() : partitionMatmul(op);
    setSplit(op.getResult(), rank - 1);
    return success();
  }
  if (sl == kReplicated && sr == rhsN) {
    // Column-parallel: every rank computes its columns from the whole input.
    op.getLhsMutable().assign(copyToGroup(op.getLhs()));
    setSplit(op.getResult(), rank - 1);
    return success();
  }
  if (sl == lhsK && sr == rhsK) {
    // Row-parallel: a partial sum on each rank, summed at once.
    sumPartial(op.getResult());
    return success();
  }
  if (rl == rr && sl == sr && sl != kReplicated && sl < rl - 2) {
    // A split batch dimension (the attention heads): each rank its own.
    setSplit(op.getResult(), sl);
    return success();
  }
  return op.emitOpError()
         << "multiplies a left operand " << describe(op.getLhs())
         << " by a right operand " << describe(op.getRhs())
         << " over the tensor group; ferry-partition-tensors splits a matmul "
            "by its weight's output dimension (column-parallel), its "
            "contracted dimension on both sides (row-parallel) or a batch "
            "dimension of both; make the parameters involved replicated or "
            "split them so (execution.tensor_sharding)";
}

// A reshape keeps the row-major order, so the block of elements rank t
// holds stays one block: split dimension d of the input lands on the first
// output dimension j with as many elements before it (prod(out[:j]) ==
// prod(in[:d])) whose size the tensor group divides.
LogicalResult Partitioner::partitionReshape(ReshapeOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getResult().getType());
  int64_t d = splitOf(op.getInput());
  // The input's type is already this rank's: its whole outer size is the
  // same (the dimensions before d are not split).
  int64_t outer = 1;
  for (int64_t i = 0; i < d; ++i)
    outer *= in.getDimSize(i);
  int64_t before = 1;
  for (int64_t j = 0; j < out.getRank(); ++j) {
    if (before == outer && out.getDimSize(j) % parts == 0) {
      setSplit(op.getResult(), j);
      return success();
    }
    before *= out.getDimSize(j);
    if (before > outer)
      break;
  }
  return op.emitOpError() << "reshapes a value split along dimension " << d
                          << " into " << out
                          << ", where its parts are not one dimension's; "
                             "ferry-partition-tensors cannot follow the split";
}

void PartitionTensorsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MeshAttr mesh = meshOf(module);
  if (!mesh || mesh.getTensor() == 1)
    return; // nothing is split
  if (mesh.getPartitioned()) {
    module.emitError() << "is partitioned already (its graph.mesh says "
                          "partitioned = true)";
    return signalPassFailure();
  }
  if (failed(Partitioner(module, mesh.getTensor(), sequenceParallel).run()))
    return signalPassFailure();
}
