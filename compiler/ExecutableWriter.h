//===- ExecutableWriter.h - rt IR -> the .fxe FlatBuffer --------*- C++ -*-===//

#ifndef FERRY_COMPILER_EXECUTABLEWRITER_H
#define FERRY_COMPILER_EXECUTABLEWRITER_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <vector>

namespace ferry {
struct Config;

// Serialises a module of rt ops (after ferry-lower-to-rt) with the resolved
// config into the payload of an executable (runtime/executable/
// Executable.fbs). Emits a diagnostic and returns an empty vector when the
// module is not lowered.
std::vector<uint8_t> serializeExecutable(mlir::ModuleOp module,
                                         const Config &config);

} // namespace ferry

#endif // FERRY_COMPILER_EXECUTABLEWRITER_H
