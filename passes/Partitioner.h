//===- Partitioner.h - ferry-partition-tensors' propagation ---*- C++ -*-===//
//
// The state of one run of ferry-partition-tensors (PartitionTensors.cpp
// describes the rules): which values are split and how, and the
// collectives built once per value. Its rules are in three files:
// PartitionTensors.cpp (functions, loops, element-wise ops, matmuls),
// PartitionSequence.cpp (sequence parallelism) and PartitionVocabulary.cpp
// (the vocabulary-parallel embedding and cross-entropy).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace ferry::partition {

using namespace mlir;
using namespace ferry::graph;

constexpr int64_t kReplicated = -1;
// A function argument or result split along the sequence (dimension 1), in
// the argument and result lists of `done` and `results`.
constexpr int64_t kSequence = -2;

// `type` with dimension `dim` divided into `parts`.
RankedTensorType localType(RankedTensorType type, int64_t dim, int64_t parts);

class Partitioner {
public:
  Partitioner(ModuleOp module, int64_t parts, bool sequenceParallel)
      : module(module), parts(parts), sequenceParallel(sequenceParallel),
        builder(module.getContext()) {}

  LogicalResult run();

private:
  ModuleOp module;
  int64_t parts;
  bool sequenceParallel;
  OpBuilder builder;
  llvm::StringMap<int64_t> declSplit; // sharded declarations: split dim
  DenseMap<Value, int64_t> split;     // split values (absent: replicated)
  DenseMap<Value, Value> entering;    // replicated value -> its f
  DenseMap<Operation *, SmallVector<int64_t>> done;    // functions: arg splits
  DenseMap<Operation *, SmallVector<int64_t>> results; // and result splits
  // Sequence parallelism: values split along the sequence (dimension 1,
  // also in `split`), and the collectives built once per value.
  DenseSet<Value> sequence;
  DenseMap<Value, Value> gathered[2]; // [replicated gradient]: part -> whole
  DenseMap<Value, Value> cut;         // replicated -> its part

  bool isSequence(Value v) const { return sequence.contains(v); }
  // The argument or result code of `v` in `done` and `results`.
  int64_t codeOf(Value v) const {
    return isSequence(v) ? kSequence : splitOf(v);
  }
  // Marks `v` (whole-typed) split along the sequence, at this rank's shape.
  void setSequence(Value v) {
    setSplit(v, 1);
    sequence.insert(v);
  }
  // Whether `v` is an activation sequence parallelism splits: a float
  // [batch, seq, ...] whose sequence the group divides.
  bool isSequenceShaped(Value v) const;
  // [batch, seq, rest...] <-> [T, batch, seq / T, rest...], where a part of
  // the sequence is one block: built at the builder's insertion point.
  Value toRankMajor(Value whole);
  Value fromRankMajor(Value rankMajor, RankedTensorType whole);
  // This rank's part of the sum of `partial` over the group, split along
  // the sequence, replacing `partial`'s other uses (Megatron's
  // reduce-scatter in place of g).
  Value reduceScatterSequence(Value partial);
  // The whole sequence of `part`, built once after it. Its gradient is the
  // reduce-scatter of partial ones (it feeds split weights), or with
  // `replicatedGradient` this rank's part of a whole one.
  Value gatherSequence(Value part, bool replicatedGradient);
  // This rank's part of the replicated `whole`, built once after it.
  Value cutSequence(Value whole);
  // The sequence-parallel rules of ops other than matmuls: null when `op`
  // has none (its split operands are then gathered).
  FailureOr<bool> partitionSequenceOp(Operation *op);

  int64_t splitOf(Value v) const {
    auto it = split.find(v);
    return it == split.end() ? kReplicated : it->second;
  }
  std::string describe(Value v) const {
    int64_t d = splitOf(v);
    return d == kReplicated ? std::string("replicated")
                            : "split along dimension " + std::to_string(d);
  }
  // Marks `v` split along `dim` and gives it this rank's shape.
  void setSplit(Value v, int64_t dim);
  Value copyToGroup(Value v);
  // The sum (or maximum) of `v` over the tensor group, built at the
  // builder's insertion point.
  Value allReduce(Value v, ReduceKind kind);
  // Megatron's g: `partial` (each rank's partial sum) summed over the group
  // right after it, replacing its other uses; with sequence parallelism,
  // reduce-scattered into this rank's part of the sequence instead.
  void sumPartial(Value partial);
  InFlightDiagnostic noRule(Operation *op, Value operand);

  LogicalResult partitionFunction(func::FuncOp f, ArrayRef<int64_t> args);
  LogicalResult partitionBlock(Block &block);
  LogicalResult partitionOp(Operation *op);
  LogicalResult partitionMatmul(MatmulOp op);
  LogicalResult partitionReshape(ReshapeOp op);
  LogicalResult partitionEmbedding(EmbeddingOp op);
  // The whole rows' maxima of logits split along their classes, built once
  // per logits value and class count, right after the logits.
  Value rowMaxOf(Value logits, uint64_t numClasses);
  LogicalResult partitionCrossEntropy(SoftmaxCrossEntropyOp op);
  LogicalResult partitionArgmaxCorrect(ArgmaxCorrectOp op);
  // Null when `op`'s logits are split along their classes and its labels
  // and weights replicated (the only split the class-split ops take), else
  // the operand that is not.
  template <class Op> Value notSplitAlongClasses(Op op) const;
  // (split logits, real classes) -> their rows' maxima
  DenseMap<std::pair<Value, uint64_t>, Value> rowMaxima;
};

} // namespace ferry::partition
