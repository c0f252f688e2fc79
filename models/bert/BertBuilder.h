//===- BertBuilder.h - config -> graph IR for BERT pretraining --*- C++ -*-===//
//
// Builds one micro-batch's forward and loss (MLM on the masked positions plus
// NSP) as `graph` IR: parameters declared once (encoder weights stacked by
// layer), one function per block kind, and `@forward`, which runs the encoder
// stack as an scf.for over the layer counter, so the IR does not grow with
// the number of layers.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_MODELS_BERT_BERTBUILDER_H
#define FERRY_MODELS_BERT_BERTBUILDER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace ferry {
struct Config;

namespace bert {

// Names of the functions the builder emits, shared with later passes.
inline constexpr const char *kEmbeddingsFn = "embeddings";
inline constexpr const char *kEncoderLayerFn = "encoder_layer";
inline constexpr const char *kHeadsFn = "heads";
inline constexpr const char *kForwardFn = "forward";

// The additive attention-mask value for padded keys (the MLPerf reference's).
inline constexpr double kMaskFill = -10000.0;

// Builds the module; `name` becomes its symbol (e.g. "bert_tiny"). The context
// must have the graph, func, scf and arith dialects loaded.
mlir::OwningOpRef<mlir::ModuleOp> buildBertGraph(mlir::MLIRContext &context,
                                                 const Config &config,
                                                 llvm::StringRef name);

} // namespace bert
} // namespace ferry

#endif // FERRY_MODELS_BERT_BERTBUILDER_H
