//===- KernelSelection.h - one entry function -> typed kernel ops -*- C++ -*-=//
//
// What ferry-select-kernels does for one entry function: it fills an
// rt.program with typed kernel ops (RtKernelOps.h) on slices of the
// program's buffers, in the form before the layout (RtRanges.h):
//
// * Reads of states (parameter_ref, parameter_slice at a layer index) and
//   reshapes are views, not copies. Other results get an rt.alloc.
// * Calls are inlined; scf.for becomes an rt.loop with its own register,
//   and loop-carried tensors live in one buffer each (copied in before the
//   loop and at the end of the body when the yielded value lives elsewhere).
// * Index arithmetic (arith.addi/subi/muli on constants, loop counters and
//   program inputs) folds into affine expressions, so addresses and kernel
//   parameters such as the dropout sample offset depend on registers.
// * graph.phase becomes rt.phase_begin / rt.phase_end.
//
// This file's class is the control flow and the value map; which kernel
// computes each graph op is a set of patterns, one file per op family
// (KernelPatterns.h, passes/lowering/patterns/).
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_KERNELSELECTION_H
#define FERRY_PASSES_LOWERING_KERNELSELECTION_H

#include "dialects/graph/GraphOps.h"
#include "dialects/rt/RtKernelCall.h"
#include "passes/PassOptions.h"
#include "passes/lowering/RtRanges.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

namespace ferry::lowering {

class KernelPatterns;

class KernelSelection {
public:
  // Lowers into `program` (empty, with its block); `states` are the
  // module's, in declaration order, each with an rt.state already;
  // `symbols` is the graph module's table (built before any rt op).
  KernelSelection(rt::ProgramOp program, mlir::SymbolTable &symbols,
                  const std::vector<StateInfo> &states,
                  const KernelPatterns &patterns);

  mlir::LogicalResult lower(mlir::func::FuncOp fn);

  llvm::SmallVector<std::string> inputs; // the registers the caller sets
  MatmulPrecision matmulInputs = MatmulPrecision::fp32;
  int64_t gemmWorkspace = 0; // cuBLASLt scratch bytes per GEMM

  // What the patterns use. A value's range (a splat constant is filled
  // into a new temporary at its first read), an index value's affine
  // expression (errors at `user`).
  mlir::FailureOr<BufferRange> range(mlir::Value v, mlir::Operation *user);
  mlir::FailureOr<Affine> affine(mlir::Value v, mlir::Operation *user);
  // A new temporary (an rt.alloc): of a tensor type's bytes, or of `bytes`
  // that one kernel uses as its scratch (`scratch` of them cuBLASLt's).
  BufferRange temp(mlir::Type type, llvm::StringRef label = {});
  BufferRange workspace(int64_t bytes, llvm::StringRef label,
                        int64_t scratch = 0);
  // A state's whole range.
  BufferRange state(llvm::StringRef name) const;
  // The kernel op `OpT` on `buffers` (record order), appended where the
  // lowering is; the caller sets its integers and floats by name.
  template <class OpT> OpT emit(llvm::ArrayRef<BufferRange> buffers) {
    return llvm::cast<OpT>(
        emitKernel(static_cast<kernels::Kernel>(OpT::kKernelIndex), buffers)
            .getOperation());
  }
  // Attribute values for the setters.
  mlir::DenseI64ArrayAttr i(int64_t v) { return b.getDenseI64ArrayAttr({v}); }
  mlir::DenseI64ArrayAttr a(const Affine &v) { return v.attr(b); }
  mlir::FloatAttr f(double v) { return b.getF64FloatAttr(v); }
  mlir::FloatAttr f(const llvm::APFloat &v) {
    return b.getF64FloatAttr(v.convertToDouble());
  }
  mlir::ArrayAttr list(llvm::ArrayRef<int64_t> values);
  mlir::SymbolTable &symbolTable() { return symbols; }

private:
  struct Frame {
    llvm::DenseMap<mlir::Value, BufferRange> ranges;
    llvm::DenseMap<mlir::Value, Affine> ints;
    // Splat constants are filled where they are first read, not where they
    // are defined: canonicalisation hoists them to the top of the function,
    // and a constant only ever stored (zeroing a gradient) needs no
    // temporary at all. The value of an integer splat is exact in a double
    // (int32).
    llvm::DenseMap<mlir::Value, double> splats;
  };

  mlir::LogicalResult lowerBlock(mlir::Block &block,
                                 llvm::SmallVectorImpl<mlir::Value> *results);
  mlir::LogicalResult lowerOp(mlir::Operation &op);
  mlir::LogicalResult lowerIndex(mlir::Operation &op);
  mlir::LogicalResult lowerLoop(mlir::scf::ForOp loop);
  mlir::LogicalResult lowerPhase(graph::PhaseOp phase);
  mlir::LogicalResult lowerCall(mlir::func::CallOp call);
  mlir::LogicalResult lowerStateAccess(mlir::Operation &op);
  // An op that computes: its pattern's kernel.
  mlir::LogicalResult selectKernel(mlir::Operation &op);

  rt::KernelCallOpInterface emitKernel(kernels::Kernel kernel,
                                       llvm::ArrayRef<BufferRange> buffers);
  void emitCopy(const BufferRange &src, const BufferRange &dst);
  void emitFill(const BufferRange &r, mlir::Type type, double value);

  rt::ProgramOp program;
  mlir::SymbolTable &symbols;
  const KernelPatterns &patterns;
  mlir::OpBuilder b; // where the next kernel goes
  llvm::StringMap<BufferRange> states;
  Frame *frame = nullptr;
  int64_t registers = 0;
  llvm::SmallVector<mlir::StringRef> phaseNames;
};

int64_t numElements(mlir::Type t);
int64_t byteSize(mlir::Type t);

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_KERNELSELECTION_H
