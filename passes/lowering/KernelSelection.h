//===- KernelSelection.h - one entry function -> kernel calls ---*- C++ -*-===//
//
// What ferry-select-kernels does for one entry function: every graph op
// becomes a call of a kernel on virtual buffers (Program):
//
// * Reads of states (parameter_ref, parameter_slice at a layer index) and
//   reshapes are views, not copies. Other results get a temporary.
// * Calls are inlined; scf.for becomes a loop with its own register, and
//   loop-carried tensors live in one buffer each (copied in before the loop
//   and at the end of the body when the yielded value lives elsewhere).
// * Index arithmetic (arith.addi/subi/muli on constants, loop counters and
//   program inputs) folds into affine expressions, so addresses and kernel
//   parameters such as the dropout sample offset depend on registers.
// * graph.phase becomes phase_begin / phase_end markers.
//
// The control flow is in KernelSelection.cpp, the op -> kernel table in
// OpKernels.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_KERNELSELECTION_H
#define FERRY_PASSES_LOWERING_KERNELSELECTION_H

#include "dialects/graph/GraphOps.h"
#include "passes/PassOptions.h"
#include "passes/lowering/RtProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

namespace ferry::lowering {

class KernelSelection {
public:
  KernelSelection(mlir::ModuleOp module, const llvm::StringMap<int> &stateIds,
                  const std::vector<StateInfo> &states);

  mlir::LogicalResult lower(mlir::func::FuncOp fn);

  Program program;
  llvm::SmallVector<std::string> inputs; // the registers the caller sets
  MatmulPrecision matmulInputs = MatmulPrecision::fp32;
  int64_t gemmWorkspace = 0; // cuBLASLt scratch bytes per GEMM

private:
  struct Frame {
    llvm::DenseMap<mlir::Value, Ref> refs;
    llvm::DenseMap<mlir::Value, Affine> ints;
    // Splat constants are filled where they are first read, not where they
    // are defined: canonicalisation hoists them to the top of the function,
    // and a constant only ever stored (zeroing a gradient) needs no
    // temporary at all. The value of an integer splat is exact in a double
    // (int32).
    llvm::DenseMap<mlir::Value, double> splats;
  };

  mlir::LogicalResult lowerBlock(mlir::Block &block, Frame &frame,
                                 llvm::SmallVectorImpl<mlir::Value> *results);
  mlir::LogicalResult lowerOp(mlir::Operation &op, Frame &frame);
  mlir::LogicalResult lowerLoop(mlir::scf::ForOp loop, Frame &frame);
  mlir::LogicalResult lowerPhase(graph::PhaseOp phase, Frame &frame);
  mlir::LogicalResult lowerCall(mlir::func::CallOp call, Frame &frame);
  mlir::LogicalResult lowerStateAccess(mlir::Operation &op, Frame &frame);
  // OpKernels.cpp: an op that computes, as one kernel call.
  mlir::LogicalResult selectKernel(mlir::Operation &op, Frame &frame);
  void selectMatmul(mlir::Operation &op, llvm::ArrayRef<Ref> ins,
                    llvm::ArrayRef<Ref> outs);
  mlir::LogicalResult selectDropout(mlir::Operation &op, Frame &f,
                                    llvm::ArrayRef<Ref> all);
  mlir::LogicalResult selectAttention(mlir::Operation &op, Frame &f,
                                      llvm::ArrayRef<Ref> all);
  mlir::LogicalResult selectOptimizerUpdate(graph::OptimizerUpdateOp up,
                                            Frame &f, llvm::ArrayRef<Ref> ins);

  Ref temp(mlir::Type type, llvm::StringRef label = {});
  // A temporary of `bytes` that one kernel uses as its scratch.
  Ref workspace(int64_t bytes, llvm::StringRef label);
  Ref stateRef(llvm::StringRef name) const;
  Instr &emit(llvm::StringRef kernel, llvm::ArrayRef<Ref> bufs,
              llvm::ArrayRef<int64_t> ints, llvm::ArrayRef<double> floats = {});
  void emitFill(const Ref &r, mlir::Type type, double value);
  mlir::FailureOr<Ref> ref(Frame &f, mlir::Value v, mlir::Operation *user);
  mlir::FailureOr<Affine> affine(Frame &f, mlir::Value v,
                                 mlir::Operation *user);

  mlir::ModuleOp module;
  mlir::SymbolTable symbols;
  const llvm::StringMap<int> &stateIds;
};

int64_t numElements(mlir::Type t);
int64_t byteSize(mlir::Type t);

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_KERNELSELECTION_H
