//===- KernelPatterns.h - which kernel computes each graph op ---*- C++ -*-===//
//
// Kernel selection's conversion patterns: one per graph op that computes,
// registered by the op's TypeID, in one file per op family under
// passes/lowering/patterns/ (as the kernel records are in
// dialects/rt/kernels/). A pattern receives the op with its operands
// already lowered (its adaptor: the ranges of the tensor operands, a new
// temporary per result, the packed rows' operands) and emits the kernel op
// with its parameters set by name.
//
// Why not MLIR's dialect conversion driver: kernel selection must visit the
// ops in program order (registers, temporaries and splat fills are
// numbered and placed in that order, which the arena plan's ties and so
// the executable follow), inline calls and carry loop values across
// scf.for; its value map is KernelSelection's.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_KERNELPATTERNS_H
#define FERRY_PASSES_LOWERING_KERNELPATTERNS_H

#include "passes/lowering/KernelSelection.h"

#include "llvm/ADT/DenseMap.h"

#include <array>
#include <memory>

namespace ferry::lowering {

// An op's operands and results as ranges, in the kernel's usual order.
struct LoweredOperands {
  llvm::SmallVector<BufferRange> ins;    // tensor operands but the packed ones
  llvm::SmallVector<BufferRange> outs;   // one new temporary per result
  llvm::SmallVector<BufferRange> packed; // packedOperands(), in that order
  // ins, outs, packed: what most kernels take.
  llvm::SmallVector<BufferRange> all() const;
};

class KernelPattern {
public:
  virtual ~KernelPattern() = default;
  // Packed rows' operands (sequence ids, dropout keys): the kernels'
  // optional last buffers, lowered after the results.
  virtual llvm::SmallVector<mlir::Value>
  packedOperands(mlir::Operation &) const {
    return {};
  }
  virtual mlir::LogicalResult select(mlir::Operation &op,
                                     const LoweredOperands &operands,
                                     KernelSelection &s) const = 0;
};

// A pattern for graph op `GraphOp`.
template <class GraphOp> class OpKernelPattern : public KernelPattern {
public:
  llvm::SmallVector<mlir::Value>
  packedOperands(mlir::Operation &op) const final {
    return packed(llvm::cast<GraphOp>(op));
  }
  mlir::LogicalResult select(mlir::Operation &op,
                             const LoweredOperands &operands,
                             KernelSelection &s) const final {
    return selectOp(llvm::cast<GraphOp>(op), operands, s);
  }
  virtual llvm::SmallVector<mlir::Value> packed(GraphOp) const { return {}; }
  virtual mlir::LogicalResult selectOp(GraphOp op,
                                       const LoweredOperands &operands,
                                       KernelSelection &s) const = 0;
};

class KernelPatterns {
public:
  template <class Pattern, class... GraphOps> void add() {
    (patterns.try_emplace(mlir::TypeID::get<GraphOps>(),
                          std::make_unique<Pattern>()),
     ...);
  }
  const KernelPattern *lookup(mlir::Operation &op) const {
    auto it = patterns.find(op.getName().getTypeID());
    return it == patterns.end() ? nullptr : it->second.get();
  }

private:
  llvm::DenseMap<mlir::TypeID, std::unique_ptr<KernelPattern>> patterns;
};

// The families (passes/lowering/patterns/*.cpp), and all of them.
void populateElementwisePatterns(KernelPatterns &patterns);
void populateRowPatterns(KernelPatterns &patterns);
void populateGemmPatterns(KernelPatterns &patterns);
void populateAttentionPatterns(KernelPatterns &patterns);
void populateIndexedPatterns(KernelPatterns &patterns);
void populateClassSplitPatterns(KernelPatterns &patterns);
void populateLayoutPatterns(KernelPatterns &patterns);
void populateReductionPatterns(KernelPatterns &patterns);
void populateCollectivePatterns(KernelPatterns &patterns);
void populateMemoryPatterns(KernelPatterns &patterns);
void populateKernelPatterns(KernelPatterns &patterns);

// The contiguous dimensions `dims` of a tensor of shape `full` a reduce or
// broadcast works on, as the outer, size and inner extents; an error at
// `op` when they are not contiguous (Layout.cpp).
mlir::FailureOr<std::array<int64_t, 3>>
contiguousExtents(mlir::Operation *op, llvm::ArrayRef<int64_t> full,
                  llvm::ArrayRef<int64_t> dims);

// The packed rows' operands an op has (sequence ids, dropout keys: each
// optional), in the order given.
inline llvm::SmallVector<mlir::Value>
presentOperands(std::initializer_list<mlir::Value> values) {
  llvm::SmallVector<mlir::Value> present;
  for (mlir::Value v : values)
    if (v)
      present.push_back(v);
  return present;
}

// Shapes as the patterns read them.
inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
}
inline int64_t product(llvm::ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_KERNELPATTERNS_H
