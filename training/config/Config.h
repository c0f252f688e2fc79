// The resolved configuration of a ferry run: the YAML schema of configs/*.yaml,
// loaded from a preset, with --set overrides applied, every value type-checked
// and every derived relation validated. Plain C++ (no MLIR, no LLVM): the
// compiler and the runtime both read it.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry {

// A configuration the user must fix. The message names the file (or the --set
// override), the key, the value found and what would be accepted.
class ConfigError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct ModelConfig {
  int64_t layers = 0;
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t ffn_size = 0;
  int64_t vocab_size = 0;
  int64_t max_positions = 0;
  int64_t type_vocab_size = 0;
  int64_t seq_length = 0;
  int64_t max_predictions = 0;
  // Sequences a row holds (packed data, `ferry-datagen --pack`); 1: one
  // sample a row, as MLPerf's unpacked files.
  int64_t max_sequences_per_pack = 1;
  // pretraining: masked LM + NSP heads; squad: a span head (start and end
  // logits per token) for SQuAD fine-tuning (`ferry squad`).
  std::string task = "pretraining";
  double hidden_dropout = 0;
  double attention_dropout = 0;
  double layer_norm_eps = 0;
  // The evaluation program also returns the encoder's last hidden states,
  // [samples, seq, hidden] (@output.eval.sequence_output; `ferry eval
  // --outputs`), as transformers' BertModel's last_hidden_state.
  bool eval_sequence_output = false;

  // The multiple the vocabulary is padded to: 8 for the matrix units, 8 x
  // execution.tensor_parallel with tensor parallelism (Megatron's padding,
  // so every rank holds as many rows of the vocabulary-parallel embedding).
  // Set by the config's validation, not a key.
  int64_t vocab_multiple = 8;
  // The vocabulary as the model computes it: padded to vocab_multiple.
  // Padded logits take no part in the softmax; import and export use
  // vocab_size.
  int64_t paddedVocabSize() const {
    return (vocab_size + vocab_multiple - 1) / vocab_multiple * vocab_multiple;
  }
  int64_t headSize() const { return hidden_size / num_heads; }
  bool packed() const { return max_sequences_per_pack > 1; }
  bool squad() const { return task == "squad"; }
};

struct OptimizerConfig {
  std::string name; // lamb | adamw
  double lr = 0;
  double beta1 = 0;
  double beta2 = 0;
  double epsilon = 0;
  double weight_decay = 0;
  double clip_norm = 0; // 0 disables clipping
};

struct LrScheduleConfig {
  std::string kind; // poly | constant
  int64_t warmup_steps = 0;
  int64_t start_warmup_step = 0;
  double power = 0;
  int64_t total_steps = 0;
};

struct TrainingConfig {
  int64_t global_batch_size = 0;
  int64_t steps = 0;
  int64_t seed = 0;
  std::string precision; // fp32 | bf16 | fp16 (auto resolved)
  // With bf16: activations whose every kernel can take it are stored as
  // bf16 (ferry-plan-bf16-storage); false keeps them fp32 (GEMM inputs
  // are still rounded).
  bool bf16_activations = true;
  // With bf16: each GEMM reads a bf16 copy of its weight, rounded once per
  // update (per phase when phased) instead of in every call
  // (ferry-plan-bf16-weight-copies); the same products, fewer bytes.
  bool bf16_weight_copies = true;
  // fp16 dynamic loss scaling: start, doubling after this many clean
  // updates, and the floor below which training stops.
  double loss_scale_initial = 65536;
  int64_t loss_scale_growth_interval = 2000;
  double loss_scale_min = 1;
  OptimizerConfig optimizer;
  LrScheduleConfig lr_schedule;
  // Evaluate on data.eval_path every this many training samples (0: never;
  // "auto" resolves to MLPerf's interval for the global batch).
  int64_t eval_every_samples = 0;
  // Stop once the evaluation's masked-LM accuracy reaches it (0: never).
  double target_mlm_accuracy = 0;
};

struct ExecutionConfig {
  std::string mode;             // resident | phased
  std::string backend;          // cpu | cuda
  int64_t micro_batch_size = 0; // resolved: "auto" = global / data_parallel
  std::string recompute;        // none | layer
  std::optional<uint64_t> device_memory_limit; // bytes; nullopt = unlimited
  // The device the compile is for: none | h100 | h200 | custom
  // (DeviceTarget.h). Its memory is the default device budget, its rates what
  // `ferry plan
  // --model` uses. The machine that compiles is never taken for it.
  std::string target;
  // execution.target: custom: its memory and rates (0: not given).
  std::optional<uint64_t> target_memory;
  double target_bf16_tflops = 0, target_fp32_tflops = 0;
  double target_memory_gbps = 0, target_host_link_gbps = 0;
  bool prefetch = true; // phased: load the next layer / micro-batch early
  bool fusion = true;   // GEMM epilogues (ferry-fuse-epilogues)
  // CUDA backend: replay each program as a CUDA graph captured on its
  // first run (false: launch every kernel from the host, every step).
  bool cuda_graphs = true;
  int64_t data_parallel = 0;
  // Tensor (Megatron) parallelism: each layer's matmuls split over T ranks
  // of one machine; T x data_parallel processes (docs/parallelism.md).
  int64_t tensor_parallel = 1;
  // Overrides of the default tensor sharding: "PATTERN=SHARDING, ...",
  // PATTERN a glob over parameter names, SHARDING split(D) or replicated
  // (TensorSharding.h).
  std::string tensor_sharding;
  // Sequence parallelism (Korthikanti et al. 2022): with tensor_parallel >
  // 1, the layer norm and dropout regions split along the sequence over
  // the tensor group, each all-reduce a reduce-scatter and an all-gather.
  bool sequence_parallel = false;
  bool replicated_tensor_sharding = false;
  // Sharding: a tensor (one layer's entry of a stacked one) with fewer
  // elements stays replicated.
  int64_t rts_min_elements = 1024;
  // How long a replica waits in a collective for the others before it
  // declares the job failed.
  double collective_timeout_seconds = 300;
};

struct DataConfig {
  std::string path;   // "synthetic" or a file, directory or glob
  std::string format; // auto | hdf5 | tfrecord
  bool shuffle = false;
  int64_t synthetic_samples = 0; // pool size of --data synthetic
  std::string eval_path;         // evaluation set: a file, directory or glob
  int64_t eval_samples = 0;      // samples of it to evaluate (0: all)
};

struct CheckpointConfig {
  std::string init;        // "" = none
  std::string save_dir;    // "" = none
  int64_t every_steps = 0; // 0 = only at the end
  int64_t keep = 0;
};

struct Config {
  ModelConfig model;
  TrainingConfig training;
  ExecutionConfig execution;
  DataConfig data;
  CheckpointConfig checkpoint;

  // Where it came from, for messages: the preset's path (or "<string>").
  std::string source;

  // Micro-batches per optimizer update:
  // global_batch_size / (micro_batch_size * data_parallel).
  int64_t gradientAccumulation() const {
    return training.global_batch_size /
           (execution.micro_batch_size * execution.data_parallel);
  }

  // The device budget the compile plans for: execution.device_memory_limit,
  // else the memory of execution.target, else none (unlimited).
  std::optional<uint64_t> deviceBudget() const;

  // Every key with its resolved value, one "key: value" line each, in a fixed
  // order: equal for equal configurations whatever the YAML's key order,
  // comments or spelling of numbers. The cache key hashes this.
  std::string canonicalText() const;

  // The same values as nested YAML that parseConfig reads back to an equal
  // Config: how an executable carries its config to the runtime.
  std::string yamlText() const;
};

// Loads a YAML config file and applies "--set key=value" overrides.
Config loadConfig(const std::string &path,
                  const std::vector<std::string> &overrides = {});

// Same, from YAML text; `sourceName` names it in messages.
Config parseConfig(const std::string &yamlText, const std::string &sourceName,
                   const std::vector<std::string> &overrides = {});

// When a key takes effect; each key of the schema declares it.
enum class KeyStage {
  Compile,    // shapes the executable: changing it needs a recompile (and a
              // resumed run must keep it)
  Run,        // read by the run: a compiled executable accepts it (--set),
              // but a resumed run must keep it (data.path, data.shuffle, ...)
  RunAnyTime, // read by the run and free to change when a run resumes
              // (training.steps, checkpoint.*, evaluation, the budget)
};
// nullopt for a key the schema does not know.
std::optional<KeyStage> keyStage(const std::string &key);

// Every key the schema knows, dotted ("model.hidden_size"), in schema order.
std::vector<std::string> configKeys();

} // namespace ferry
