//===- RtDialect.cpp - the `rt` dialect -----------------------------------===//

#include "dialects/rt/RtDialect.h"
#include "dialects/rt/RtAttributes.h"
#include "dialects/rt/RtKernelOps.h"

#include "runtime/executable/KernelTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::rt;

#include "dialects/rt/RtDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/rt/RtOps.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/rt/RtTypes.cpp.inc"

void RtDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/rt/RtTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/rt/RtOps.cpp.inc"
      >();
  // The typed kernel ops (RtKernelOps.h), registered shard by shard.
  registerRtDialectOperations(this);
}

// Names for the printed IR: a state's buffer after the state, the rest by
// kind, so dumps read `rt.slice %layer.w [...]`.
void AllocOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "t");
}

void StateRefOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), getState());
}

void ArenaOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), getHost() ? "host" : "arena");
}

void SliceOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "r");
}

LogicalResult AllocOp::verify() {
  auto bytes = static_cast<int64_t>(getBytes());
  if (bytes <= 0)
    return emitOpError() << "size must be positive, found " << bytes;
  if (auto scratch = getScratch()) {
    auto s = static_cast<int64_t>(*scratch);
    if (s < 0 || s > bytes)
      return emitOpError() << "scratch must be in [0, size], found " << s;
  }
  return success();
}

LogicalResult StateRefOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto module = (*this)->getParentOfType<ModuleOp>();
  if (!module || !symbolTable.lookupSymbolIn<StateOp>(module, getStateAttr()))
    return emitOpError() << "names " << getStateAttr()
                         << ", which is no rt.state of the module";
  return success();
}

LogicalResult SliceOp::verify() {
  auto bytes = static_cast<int64_t>(getBytes());
  if (bytes <= 0)
    return emitOpError() << "size must be positive, found " << bytes;
  // A constant range must lie within a temporary it slices.
  auto alloc = getSource().getDefiningOp<AllocOp>();
  ArrayRef<int64_t> offset = getOffset();
  bool constant =
      llvm::all_of(offset.drop_front(), [](int64_t a) { return a == 0; });
  if (alloc && constant &&
      (offset[0] < 0 ||
       offset[0] + bytes > static_cast<int64_t>(alloc.getBytes())))
    return emitOpError() << "range [" << offset[0] << ", " << offset[0] + bytes
                         << ") is outside its " << alloc.getBytes()
                         << "-byte rt.alloc";
  return success();
}

LogicalResult ProgramOp::verifyRegions() {
  auto names = (*this)->getAttrOfType<ArrayAttr>(attrs::kPhaseNames);
  // (That they are strings is the dialect's attribute check.)
  auto known = [&](ArrayRef<int64_t> phase) {
    bool constant =
        llvm::all_of(phase.drop_front(), [](int64_t a) { return a == 0; });
    return constant && names && phase[0] >= 0 &&
           phase[0] < static_cast<int64_t>(names.size());
  };
  Operation *marker = nullptr;
  getBody().walk([&](Operation *op) {
    auto begin = dyn_cast<PhaseBeginOp>(op);
    auto end = dyn_cast<PhaseEndOp>(op);
    if ((begin && !known(begin.getPhase())) || (end && !known(end.getPhase())))
      marker = op;
    return marker ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (marker)
    return emitOpError() << "has a '" << marker->getName().stripDialect()
                         << "' whose phase is not a constant index of "
                            "rt.phase_names";
  return success();
}
