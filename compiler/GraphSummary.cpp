//===- GraphSummary.cpp - a human-readable summary of graph IR ------------===//
//
// Everything reported is read off the IR itself (not the config), so the
// summary shows what the compiler built.
//
//===----------------------------------------------------------------------===//

#include "compiler/GraphSummary.h"

#include "dialects/graph/GraphAttributes.h"
#include "dialects/graph/GraphOps.h"
#include "models/bert/BertBuilder.h"
#include "training/config/Config.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace ferry;

namespace {
// 4386306 -> "4,386,306"
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

// The constant trip count of the layer loop in @forward, or -1.
int64_t layerLoopTrips(func::FuncOp forward) {
  int64_t trips = -1;
  forward.walk([&](scf::ForOp loop) {
    auto lb = loop.getLowerBound().getDefiningOp<arith::ConstantIndexOp>();
    auto ub = loop.getUpperBound().getDefiningOp<arith::ConstantIndexOp>();
    auto step = loop.getStep().getDefiningOp<arith::ConstantIndexOp>();
    if (lb && ub && step && step.value() > 0)
      trips = (ub.value() - lb.value() + step.value() - 1) / step.value();
  });
  return trips;
}

// How the MLM decoder reaches the word embedding: the @heads argument that
// @forward feeds from `parameter_ref @embeddings.word`, used by a transposed
// matmul inside @heads.
std::string describeTiedDecoder(ModuleOp module) {
  auto forward = graph::lookupEntry(module, graph::Entry::Forward);
  auto heads = module.lookupSymbol<func::FuncOp>(bert::kHeadsFn);
  if (!forward || !heads)
    return "not found";
  std::string found = "not found";
  forward.walk([&](func::CallOp call) {
    if (call.getCallee() != bert::kHeadsFn)
      return;
    for (auto [i, operand] : llvm::enumerate(call.getOperands())) {
      auto ref = operand.getDefiningOp<graph::ParameterRefOp>();
      if (!ref || ref.getName() != "embeddings.word")
        continue;
      for (Operation *user : heads.getArgument(i).getUsers()) {
        auto mm = dyn_cast<graph::MatmulOp>(user);
        if (mm && mm.getRhs() == heads.getArgument(i) && mm.getTransposeRhs())
          found = llvm::formatv("@heads argument {0} = @embeddings.word, used "
                                "transposed by the decoder's graph.matmul",
                                i)
                      .str();
      }
    }
  });
  return found;
}
} // namespace

std::string ferry::summarizeGraph(ModuleOp module, const Config &config) {
  const ModelConfig &m = config.model;
  std::string out;
  llvm::raw_string_ostream os(out);

  int64_t declared = 0, stacked = 0, values = 0, decayed = 0;
  for (auto param : module.getOps<graph::ParameterOp>()) {
    ++declared;
    stacked += param.getStacked() ? 1 : 0;
    values += param.getTensorType().getNumElements();
    if (!param.getNoWeightDecay())
      decayed += param.getTensorType().getNumElements();
  }
  // The padding rows of the word embedding and the decoder bias.
  int64_t padding = (m.paddedVocabSize() - m.vocab_size) * (m.hidden_size + 1);

  os << llvm::formatv("model       BERT: {0} layers, hidden {1}, {2} heads of "
                      "{3}, ffn {4}, vocab {5} (padded to {6}), seq {7}, {8} "
                      "predictions\n",
                      m.layers, m.hidden_size, m.num_heads, m.headSize(),
                      m.ffn_size, m.vocab_size, m.paddedVocabSize(),
                      m.seq_length, m.max_predictions);
  os << llvm::formatv(
      "batch       global {0} = micro-batch {1} x {2} "
      "accumulation x {3} data-parallel\n",
      config.training.global_batch_size, config.execution.micro_batch_size,
      config.gradientAccumulation(), config.execution.data_parallel);
  os << llvm::formatv("parameters  {0} declarations ({1} stacked by layer); "
                      "{2} values, {3} at the configured vocabulary; {4} "
                      "weight-decayed\n",
                      declared, stacked, grouped(values),
                      grouped(values - padding), grouped(decayed));
  os << "functions  ";
  for (auto fn : module.getOps<func::FuncOp>()) {
    int64_t ops = 0;
    fn.walk([&](Operation *op) { ops += op != fn.getOperation(); });
    os << llvm::formatv(" @{0} ({1} ops)", fn.getSymName(), ops);
  }
  os << "\n";
  if (auto forward = graph::lookupEntry(module, graph::Entry::Forward))
    os << llvm::formatv("layer loop  scf.for in @forward, {0} iterations, "
                        "calling the one @{1} body\n",
                        layerLoopTrips(forward), bert::kEncoderLayerFn);
  os << "tied        " << describeTiedDecoder(module) << "\n";

  std::string ir;
  llvm::raw_string_ostream irStream(ir);
  module.print(irStream);
  os << llvm::formatv("IR          {0} lines\n",
                      std::count(ir.begin(), ir.end(), '\n'));
  return out;
}
