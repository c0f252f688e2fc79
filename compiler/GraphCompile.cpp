//===- GraphCompile.cpp - config -> verified graph IR ---------------------===//

#include "compiler/GraphCompile.h"
#include "runtime/ByteSize.h"

#include "compiler/CompileSession.h"
#include "compiler/ExecutableWriter.h"
#include "models/bert/BertBuilder.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "passes/UserError.h"
#include "training/config/Config.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cctype>
#include <cstdlib>

#include <unistd.h>

using namespace mlir;

namespace {

// Physical memory of this machine in bytes (0 when unknown).
uint64_t physicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0
             ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size)
             : 0;
}

// Runs `pm` on `module`, holding its diagnostics back until it ends. A
// failure a pass marked as the user's (passes/UserError.h) prints its
// message alone: MLIR's "Failures have been detected ..." error, which
// points at the reproducer, is dropped with the reproducer itself. Any other
// failure prints everything, as MLIR would have.
LogicalResult runPipeline(PassManager &pm, ModuleOp module,
                          ferry::CompileSession *session) {
  MLIRContext *context = module.getContext();
  std::vector<Diagnostic> held;
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler hold(context, [&](Diagnostic &diagnostic) {
      held.push_back(std::move(diagnostic));
      return success();
    });
    result = pm.run(module);
  }
  bool userError = failed(result) && module->hasAttr(ferry::kUserErrorAttr);
  for (Diagnostic &diagnostic : held) {
    if (userError && StringRef(diagnostic.str()).starts_with(
                         "Failures have been detected while processing"))
      continue;
    context->getDiagEngine().emit(std::move(diagnostic));
  }
  if (userError && session)
    session->discardReproducer();
  return result;
}

} // namespace

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
  if (failed(runPipeline(pm, *module, session)))
    return nullptr;
  return module;
}

LogicalResult ferry::lowerGraph(ModuleOp module, const Config &config,
                                const std::vector<std::string> &programs,
                                const std::string &stopAfter,
                                CompileSession *session) {
  if (stopAfter == "graph")
    return success();
  const ExecutionConfig &e = config.execution;
  // training.precision (bf16, fp16) rounds matmul inputs; fp16 also scales
  // the loss (ferry-autodiff's seed) and unscales in the optimizer.
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
  options.replicas = e.data_parallel;
  options.rts = e.replicated_tensor_sharding;
  options.rtsMinElements = e.rts_min_elements;
  options.fuseAttention =
      e.fusion && config.training.precision != "fp16";
  buildTrainingPipeline(pm, options);
  if (failed(runPipeline(pm, module, session)))
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
  lowering.bf16Activations = config.training.bf16_activations;
  lowering.bf16WeightCopies = config.training.bf16_weight_copies;
  // cuBLASLt's scratch per GEMM on cuda: 32 MiB, what NVIDIA recommends on
  // Hopper; ferry-place-buffers shrinks it under a small device budget.
  if (config.execution.backend == "cuda")
    lowering.gemmWorkspace = 32 << 20;
  buildLoweringPipeline(lower, lowering);
  // A stand-in for a compiler bug, for the reproducer tests (DebugFail.cpp).
  if (const char *fail = std::getenv("FERRY_DEBUG_FAIL_PASS");
      fail && std::string(fail) == "1")
    lower.addPass(createDebugFailPass());
  if (failed(runPipeline(lower, module, session)))
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
  // Without a budget, a CPU plan is checked against this machine's memory
  // (the CPU backend's arena and remote buffers both live there), so an
  // absurd model fails here with the fix rather than at allocation. A CUDA
  // plan without a budget is checked by the runtime against its device.
  uint64_t hostBytes = module->hasAttr("rt.host_bytes")
                           ? module->getAttrOfType<IntegerAttr>("rt.host_bytes")
                                 .getInt()
                           : 0;
  uint64_t needed = static_cast<uint64_t>(arena.getInt()) + hostBytes;
  uint64_t machine = physicalMemoryBytes();
  if (!config.execution.device_memory_limit &&
      config.execution.backend == "cpu" && machine > 0 && needed > machine)
    return emitError(module.getLoc())
           << "the plan needs " << formatByteSize(needed) << " of memory ("
           << needed << " bytes: the arena "
           << formatByteSize(arena.getInt())
           << (hostBytes ? " and remote buffers " + formatByteSize(hostBytes)
                         : std::string())
           << ") but this machine has " << formatByteSize(machine)
           << "; reduce the model or execution.micro_batch_size, set "
              "execution.recompute: layer, or compile on (and for) a machine "
              "with more memory";
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
