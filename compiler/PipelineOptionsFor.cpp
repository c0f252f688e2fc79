// The pipelines' options for a config (PipelineOptionsFor.h).
#include "compiler/PipelineOptionsFor.h"
#include "training/config/TensorSharding.h"

using namespace ferry;

PipelineOptions
ferry::pipelineOptionsFor(const Config &config,
                          const std::vector<std::string> &programs) {
  const ExecutionConfig &e = config.execution;
  const std::string &precision = config.training.precision;
  PipelineOptions o;
  o.programs = programs;
  // The attention fusion takes fp32 or bf16 products; fp16 keeps the
  // unfused chain.
  o.fuseAttention = e.fusion && precision != "fp16";
  // fp16 seeds the backward with the runtime's dynamic loss scale.
  o.lossScaling = precision == "fp16";
  o.recompute = e.recompute == "layer";
  o.phased = e.mode == "phased";
  o.replicas = e.data_parallel;
  o.tensorParallel = e.tensor_parallel;
  o.sequenceParallel = e.sequence_parallel;
  if (e.tensor_parallel > 1)
    for (const ShardingRule &rule : tensorShardingRules(config))
      o.tensorSharding.push_back(formatShardingRule(rule));
  o.rts = e.replicated_tensor_sharding;
  o.rtsMinElements = e.rts_min_elements;
  o.deviceBudget = config.deviceBudget();
  if (!e.device_memory_limit && o.deviceBudget)
    o.budgetSource = "target:" + e.target;
  o.fusion = e.fusion;
  o.prefetch = e.prefetch;
  o.matmulPrecision = precision == "bf16"   ? MatmulPrecision::bf16
                      : precision == "fp16" ? MatmulPrecision::fp16
                                            : MatmulPrecision::fp32;
  o.bf16Activations = config.training.bf16_activations;
  o.bf16WeightCopies = config.training.bf16_weight_copies;
  // cuBLASLt's scratch per GEMM on cuda: 32 MiB, what NVIDIA recommends on
  // Hopper; ferry-place-buffers shrinks it under a small device budget.
  o.gemmWorkspace = e.backend == "cuda" ? int64_t{32} << 20 : 0;
  return o;
}
