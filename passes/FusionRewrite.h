//===- FusionRewrite.h - how the fusion passes drive their patterns -------===//
//
// The fusion passes (ferry-fuse-*) are rewrite patterns on the greedy
// driver, visiting ops in program order (where two fusions compete for one
// op, the earlier root wins). They change nothing but the ops they fuse: no
// folding, no constant CSE, no region simplification, so the lowering sees
// what canonicalisation left plus the fused ops.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_FUSIONREWRITE_H
#define FERRY_PASSES_FUSIONREWRITE_H

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ferry {

inline mlir::GreedyRewriteConfig fusionRewriteConfig() {
  mlir::GreedyRewriteConfig config;
  config.setUseTopDownTraversal(true)
      .enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(mlir::GreedySimplifyRegionLevel::Disabled);
  return config;
}

} // namespace ferry

#endif // FERRY_PASSES_FUSIONREWRITE_H
