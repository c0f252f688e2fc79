//===- GraphMesh.cpp - the mesh and sharding attributes' rules ------------===//
//
// Verifiers of #graph.mesh and #graph.sharding (GraphMeshAttrs.td) and of a
// sharded declaration against its module's mesh. Each error has a
// -verify-diagnostics case in test/dialects/graph/invalid-mesh.mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphAttributes.h"
#include "dialects/graph/GraphOps.h"

using namespace mlir;
using namespace ferry::graph;

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t tensor, int64_t data, bool) {
  if (tensor < 1 || data < 1)
    return emitError() << "a mesh has at least one rank on each axis, found "
                          "tensor = "
                       << tensor << ", data = " << data;
  return success();
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t split, bool partial) {
  if (split < -1)
    return emitError() << "split names a dimension (0 or more), found "
                       << split;
  if (split >= 0 && partial)
    return emitError() << "a sharding is split or partial, not both";
  return success();
}

MeshAttr ferry::graph::meshOf(Operation *op) {
  auto module =
      isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  return module ? module->getAttrOfType<MeshAttr>(attrs::kMesh) : MeshAttr();
}

LogicalResult ferry::graph::verifyDeclarationSharding(Operation *decl,
                                                      RankedTensorType type,
                                                      bool stacked,
                                                      ShardingAttr sharding) {
  if (!sharding)
    return success();
  MeshAttr mesh = meshOf(decl);
  if (!mesh)
    return decl->emitOpError()
           << "is sharded, but its module has no " << attrs::kMesh
           << " (#graph.mesh<tensor = T, data = D>)";
  if (!sharding.isSplit())
    return decl->emitOpError()
           << "a declaration's sharding splits a dimension, found " << sharding;
  // A part sharded over the replicas (ferry-insert-collectives) is split
  // as its whole part's shape says.
  if (auto part = decl->getAttrOfType<DenseI64ArrayAttr>(attrs::kShardOf))
    type = RankedTensorType::get(part.asArrayRef(), type.getElementType());
  int64_t dim = sharding.getSplit();
  if (dim >= type.getRank())
    return decl->emitOpError()
           << "splits dimension " << dim << " of " << type << ", which has "
           << type.getRank() << " dimensions";
  if (stacked && dim == 0)
    return decl->emitOpError() << "is stacked: its dimension 0 is the layer, "
                                  "which is never split; split another";
  int64_t parts = mesh.getTensor(), size = type.getDimSize(dim);
  if (!mesh.getPartitioned() && size % parts != 0)
    return decl->emitOpError()
           << "splits dimension " << dim << " (size " << size << ") into "
           << parts << " tensor-parallel parts, which do not divide it";
  return success();
}
