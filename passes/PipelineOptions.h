//===- PipelineOptions.h - the options of ferry's pipelines -----*- C++ -*-===//
//
// The one options struct of ferry's pipelines, declared in
// PipelineOptions.def. Plain C++ with no MLIR or LLVM: the executable cache
// key hashes it, and the runtime-only `ferry` computes that key too.
// ferry-opt's flags for it are in Pipelines.cpp, made from the same list.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_PIPELINEOPTIONS_H
#define FERRY_PASSES_PIPELINEOPTIONS_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ferry {

// How GEMMs round their inputs (training.precision): ferry-select-kernels'
// `matmul-precision`, and the precision flag of gemm calls (its kernel record).
enum class MatmulPrecision { fp32 = 0, bf16 = 1, fp16 = 2 };

// A byte budget: the device's (execution.device_memory_limit, or the
// target's memory) and what ferry-place-buffers derives from it. One
// representation from the config to the passes: no value means unlimited.
// On the command line: `none`, a byte count or a size ("24MiB").
using ByteBudget = std::optional<uint64_t>;

struct PipelineOptions {
#define FERRY_PIPELINE_OPTION(TYPE, FIELD, FLAG, DEFAULT, ...)                \
  TYPE FIELD = DEFAULT;
#define FERRY_PIPELINE_LIST_OPTION(FIELD, FLAG, DESCRIPTION)                  \
  std::vector<std::string> FIELD;
#include "passes/PipelineOptions.def"

  // Every option as (flag, value) in declaration order, the values spelled
  // as ferry-opt parses them: the cache key's `pipeline.*` fields.
  std::vector<std::pair<std::string, std::string>> fields() const;
};

// How option values are spelled on the command line.
std::string optionText(bool value);
std::string optionText(int64_t value);
std::string optionText(const ByteBudget &value);
std::string optionText(MatmulPrecision value);
std::string optionText(const std::string &value);
std::string optionText(const std::vector<std::string> &value);

} // namespace ferry

#endif // FERRY_PASSES_PIPELINEOPTIONS_H
