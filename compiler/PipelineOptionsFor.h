// The pipelines' options for a config: the one place they derive from it,
// for `ferry compile` (GraphCompile.cpp) and the executable cache key
// (CompileCache.cpp) alike. No MLIR: the runtime-only `ferry` computes keys.
#pragma once

#include "passes/PipelineOptions.h"
#include "training/config/Config.h"

#include <string>
#include <vector>

namespace ferry {

// `programs`: the entry functions to lower (empty: train_step).
PipelineOptions pipelineOptionsFor(const Config &config,
                                   const std::vector<std::string> &programs);

} // namespace ferry
