//===- GraphDialect.h - the `graph` dialect ---------------------*- C++ -*-===//
//
// The model stage of ferry's pipeline; see GraphDialect.td and
// docs/dialects/graph.md.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_GRAPH_GRAPHDIALECT_H
#define FERRY_DIALECTS_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/graph/GraphDialect.h.inc"

#endif // FERRY_DIALECTS_GRAPH_GRAPHDIALECT_H
