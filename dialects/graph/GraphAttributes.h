//===- GraphAttributes.h - the graph stage's attributes ---------*- C++ -*-===//
//
// The discardable attributes the builder and the graph passes hand each other
// (the training settings, which function plays which part, the micro-batch
// loop, input and output names, sharding). Each is named here once and
// checked by the `graph` dialect's verifier (GraphAttributes.cpp), so a pass
// can start from IR written by hand or by another tool and a broken contract
// is a diagnostic at the attribute, not a failed lookup several passes later.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_GRAPH_GRAPHATTRIBUTES_H
#define FERRY_DIALECTS_GRAPH_GRAPHATTRIBUTES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace ferry::graph {

namespace attrs {
// Module: the dictionary of training settings ferry-insert-optimizer reads
// (every key of kTrainingKeys, with its kind).
inline constexpr llvm::StringLiteral kTraining = "graph.training";
// Module: informational, from the builder.
inline constexpr llvm::StringLiteral kModel = "graph.model";
inline constexpr llvm::StringLiteral kVocabSize = "graph.vocab_size";
inline constexpr llvm::StringLiteral kPaddedVocabSize =
    "graph.padded_vocab_size";
// func.func: the part the function plays (Entry below), one per module.
inline constexpr llvm::StringLiteral kEntry = "graph.entry";
// Function argument / result: the name of a program input / output.
inline constexpr llvm::StringLiteral kInput = "graph.input";
inline constexpr llvm::StringLiteral kOutput = "graph.output";
// scf.for (unit): a loop over micro-batches (ferry-batch-serialise).
inline constexpr llvm::StringLiteral kMicroBatches = "graph.micro_batches";
// func.call: a forward re-run in the backward (ferry-recompute).
inline constexpr llvm::StringLiteral kRecompute = "graph.recompute";
// graph.parameter / graph.variable: rows initialised (the rest are padding).
inline constexpr llvm::StringLiteral kInitRows = "graph.init_rows";
// graph.parameter / graph.variable: a shard of this whole shape, one of
// kShardReplicas (ferry-insert-collectives); the two come together.
inline constexpr llvm::StringLiteral kShardOf = "graph.shard_of";
inline constexpr llvm::StringLiteral kShardReplicas = "graph.shard_replicas";
// Module: the device mesh (#graph.mesh; docs/parallelism.md).
inline constexpr llvm::StringLiteral kMesh = "graph.mesh";
} // namespace attrs

// The functions the passes find each other's work by. Their symbol names
// are the program names users see (train_step, eval_step), but the passes
// look them up by this mark, which the verifier keeps unique.
// (GraphAttributes.cpp names them in this order.)
enum class Entry {
  Forward,     // the model's forward, as built (ferry-autodiff's input)
  ForwardGrad, // forward and backward (ferry-autodiff)
  ForwardEval, // the forward without dropout (ferry-insert-eval)
  TrainStep,   // one optimizer update (ferry-insert-optimizer)
  EvalStep,    // one evaluation pass (ferry-insert-eval)
};
llvm::StringRef entryName(Entry entry);
std::optional<Entry> parseEntry(llvm::StringRef name);

// Marks `fn` as playing `entry`.
void markEntry(mlir::func::FuncOp fn, Entry entry);
// The function of `module` marked `entry`, or null.
mlir::func::FuncOp lookupEntry(mlir::ModuleOp module, Entry entry);

} // namespace ferry::graph

#endif // FERRY_DIALECTS_GRAPH_GRAPHATTRIBUTES_H
