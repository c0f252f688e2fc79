//===- GraphCompile.cpp - config -> verified graph IR ---------------------===//

#include "compiler/GraphCompile.h"
#include "runtime/ByteSize.h"

#include "compiler/CompileSession.h"
#include "compiler/ExecutableWriter.h"
#include "models/bert/BertBuilder.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "runtime/config/Config.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cctype>

using namespace mlir;

OwningOpRef<ModuleOp> ferry::compileGraph(MLIRContext &context,
                                          const Config &config,
                                          const std::string &name,
                                          CompileSession *session) {
  OwningOpRef<ModuleOp> module = bert::buildBertGraph(context, config, name);
  if (failed(verify(*module))) {
    emitError(module->getLoc())
        << "internal error: the BERT builder produced invalid graph IR for "
        << config.source << "; this is a bug in ferry, please report it";
    return nullptr;
  }
  if (session)
    session->dumpStage("bert-builder", *module);
  PassManager pm(&context);
  if (session)
    session->instrument(pm);
  buildGraphCleanupPipeline(pm);
  if (failed(pm.run(*module)))
    return nullptr;
  return module;
}

LogicalResult ferry::lowerGraph(ModuleOp module, const Config &config,
                                const std::vector<std::string> &programs,
                                const std::string &stopAfter,
                                CompileSession *session) {
  if (stopAfter == "graph")
    return success();
  // Settings the schema accepts for the stages still to come: refused by
  // name rather than silently compiled as something else.
  auto refuse = [&](const std::string &key, const std::string &value,
                    const std::string &why) {
    return emitError(module.getLoc())
           << key << ": " << value << " is not supported yet (" << why
           << "); use "
           << (key == "execution.mode"        ? "resident"
               : key == "execution.recompute" ? "none"
               : key == "training.precision"  ? "fp32"
               : key == "execution.backend"   ? "cpu"
                                              : "1");
  };
  const ExecutionConfig &e = config.execution;
  // training.precision (bf16, fp16) rounds matmul inputs; fp16 also scales
  // the loss (ferry-autodiff's seed) and unscales in the optimizer.
  if (e.data_parallel != 1)
    return refuse("execution.data_parallel", std::to_string(e.data_parallel),
                  "replicas arrive after phased execution");
  PassManager pm(module.getContext());
  if (session)
    session->instrument(pm);
  TrainingPipelineOptions options;
  options.recompute = e.recompute == "layer";
  options.batchSerialise = e.mode == "phased";
  options.phased = e.mode == "phased";
  options.lossScaling = config.training.precision == "fp16";
  options.deviceMemoryLimit =
      e.device_memory_limit ? static_cast<int64_t>(*e.device_memory_limit) : 0;
  buildTrainingPipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();
  if (stopAfter == "training")
    return success();
  PassManager lower(module.getContext());
  if (session)
    session->instrument(lower);
  LoweringPipelineOptions lowering;
  lowering.programs = programs;
  lowering.deviceMemoryLimit =
      config.execution.device_memory_limit
          ? static_cast<int64_t>(*config.execution.device_memory_limit)
          : 0;
  lowering.prefetch = config.execution.prefetch;
  lowering.matmulPrecision =
      config.training.precision == "bf16"   ? MatmulPrecision::bf16
      : config.training.precision == "fp16" ? MatmulPrecision::fp16
                                            : MatmulPrecision::fp32;
  lowering.fusion = config.execution.fusion;
  // cuBLASLt's scratch per GEMM on cuda: 32 MiB, what NVIDIA recommends on
  // Hopper; ferry-place-buffers shrinks it under a small device budget.
  if (config.execution.backend == "cuda")
    lowering.gemmWorkspace = 32 << 20;
  buildLoweringPipeline(lower, lowering);
  if (failed(lower.run(module)))
    return failure();
  auto arena = module->getAttrOfType<IntegerAttr>("rt.arena_bytes");
  if (config.execution.device_memory_limit &&
      static_cast<uint64_t>(arena.getInt()) >
          *config.execution.device_memory_limit)
    return emitError(module.getLoc())
           << "the plan needs " << formatByteSize(arena.getInt())
           << " of device memory (" << arena.getInt()
           << " bytes) but execution.device_memory_limit is "
           << formatByteSize(*config.execution.device_memory_limit)
           << "; raise the limit, lower execution.micro_batch_size, set "
              "execution.recompute: layer, or use execution.mode: phased "
              "(weights, optimizer state and activations streamed through "
              "host memory)";
  return success();
}

std::vector<uint8_t> ferry::compileExecutable(
    MLIRContext &context, const Config &config, const std::string &name,
    const std::vector<std::string> &programs, CompileSession *session) {
  OwningOpRef<ModuleOp> module = compileGraph(context, config, name, session);
  if (!module || failed(lowerGraph(*module, config, programs, "rt", session)))
    return {};
  return serializeExecutable(*module, config);
}
