// The checks that run once every config key has its typed value: sane limits
// on each size, relations between keys, and the largest tensors the model
// would declare. Split from Config.cpp, which reads and types the keys.
#include "training/config/ConfigInternal.h"
#include "training/config/TensorSharding.h"

#include <cmath>
#include <string>

namespace ferry::config_detail {
namespace {

// The largest tensor the model may declare: 2^40 elements (4 TiB in fp32).
constexpr unsigned __int128 kMaxTensorElements =
    static_cast<unsigned __int128>(1) << 40;

// Sizes far beyond any published BERT, refused before the compiler plans (or
// the runtime allocates) anything for them. A value past its limit is almost
// always a typo or a unit slip (bytes for elements); the reference point in
// each row is what the message offers as the scale to compare with.
struct SaneLimit {
  const char *key;
  int64_t ModelConfig::*model; // or nullptr with `training`
  int64_t limit;
  const char *reference;
};

const SaneLimit kSaneLimits[] = {
    {"model.layers", &ModelConfig::layers, 1024, "BERT-large has 24"},
    {"model.hidden_size", &ModelConfig::hidden_size, 65536,
     "BERT-large uses 1024"},
    {"model.num_heads", &ModelConfig::num_heads, 1024, "BERT-large uses 16"},
    {"model.ffn_size", &ModelConfig::ffn_size, 262144, "BERT-large uses 4096"},
    {"model.vocab_size", &ModelConfig::vocab_size, 4194304, "BERT uses 30522"},
    {"model.max_positions", &ModelConfig::max_positions, 65536,
     "BERT uses 512"},
    {"model.type_vocab_size", &ModelConfig::type_vocab_size, 1024,
     "BERT uses 2"},
    {"model.seq_length", &ModelConfig::seq_length, 65536,
     "MLPerf BERT uses 512"},
    {"model.max_predictions", &ModelConfig::max_predictions, 65536,
     "MLPerf BERT uses 76"},
};

// The largest global batch: MLPerf's largest submissions use 65536 or fewer.
constexpr int64_t kMaxGlobalBatch = 1 << 24;

// Where a relation error points: the --set override of one of its keys if
// there is one (the user's latest word), else the config file.
std::string originOf(const Config &c, const RawValues &raw,
                     std::initializer_list<const char *> keys) {
  std::string origin = c.source;
  for (const char *key : keys) {
    auto it = raw.find(key);
    if (it != raw.end() && it->second.origin.rfind("--set ", 0) == 0)
      origin = it->second.origin;
  }
  return origin;
}

} // namespace

void validateRelations(Config &c, const RawValues &raw) {
  auto where = [&](std::initializer_list<const char *> keys) {
    return originOf(c, raw, keys);
  };
  // Where one key was written: its line in the file, or its --set.
  auto originOfKey = [&](const char *key) {
    auto it = raw.find(key);
    return it == raw.end() ? c.source : it->second.origin;
  };
  const ModelConfig &m = c.model;
  for (const SaneLimit &l : kSaneLimits) {
    int64_t value = m.*(l.model);
    if (value > l.limit)
      throw ConfigError(
          originOfKey(l.key) + ": " + l.key + " " + std::to_string(value) +
          " is beyond ferry's limit of " + std::to_string(l.limit) + " (" +
          l.reference +
          "); a value this large is usually a typo. Use at most " +
          std::to_string(l.limit));
  }
  if (c.training.global_batch_size > kMaxGlobalBatch)
    throw ConfigError(
        originOfKey("training.global_batch_size") +
        ": training.global_batch_size " +
        std::to_string(c.training.global_batch_size) +
        " is beyond ferry's limit of " + std::to_string(kMaxGlobalBatch) +
        " samples per update (MLPerf's largest runs use 65536); use a smaller "
        "global batch");
  if (m.hidden_size % m.num_heads != 0)
    throw ConfigError(
        where({"model.hidden_size", "model.num_heads"}) +
        ": model.hidden_size " + std::to_string(m.hidden_size) +
        " is not divisible by model.num_heads " + std::to_string(m.num_heads) +
        "; choose a number of heads that divides the hidden size");
  const ExecutionConfig &tp = c.execution;
  c.model.vocab_multiple = 8 * tp.tensor_parallel;
  if (tp.tensor_parallel > 1) {
    const ExecutionConfig &e = tp;
    // Megatron's layout splits the heads and the FFN's inner dimension.
    const char *what = m.num_heads % e.tensor_parallel != 0  ? "model.num_heads"
                       : m.ffn_size % e.tensor_parallel != 0 ? "model.ffn_size"
                                                             : nullptr;
    if (what)
      throw ConfigError(
          where({"execution.tensor_parallel", what}) + ": " + what + " " +
          std::to_string(what == std::string("model.num_heads") ? m.num_heads
                                                                : m.ffn_size) +
          " is not divisible by execution.tensor_parallel " +
          std::to_string(e.tensor_parallel) +
          " (each rank takes an equal part of the heads and of the FFN); the "
          "nearest valid tensor_parallel is " +
          nearestValidTensorParallel(m, e.tensor_parallel));
    if (e.sequence_parallel && m.seq_length % e.tensor_parallel != 0)
      throw ConfigError(
          where({"execution.sequence_parallel", "model.seq_length"}) +
          ": model.seq_length " + std::to_string(m.seq_length) +
          " is not divisible by execution.tensor_parallel " +
          std::to_string(e.tensor_parallel) +
          " (sequence parallelism gives each rank an equal part of the "
          "sequence); the nearest valid tensor_parallel is " +
          nearestValidTensorParallel(m, e.tensor_parallel, true) +
          ", or set execution.sequence_parallel: false");
    if (e.sequence_parallel && m.packed())
      throw ConfigError(
          where(
              {"execution.sequence_parallel", "model.max_sequences_per_pack"}) +
          ": sequence parallelism with packed rows is not built (a packed "
          "row's dropout keys name its sequences' tokens, which the split "
          "would cut); set execution.sequence_parallel: false or "
          "model.max_sequences_per_pack: 1");
  }
  if (tp.sequence_parallel && tp.tensor_parallel < 2)
    throw ConfigError(
        where({"execution.sequence_parallel", "execution.tensor_parallel"}) +
        ": execution.sequence_parallel splits the sequence over the "
        "tensor-parallel group, but execution.tensor_parallel is " +
        std::to_string(tp.tensor_parallel) +
        "; set execution.tensor_parallel to 2 or more, or "
        "execution.sequence_parallel: false");
  // Its syntax, checked now; which parameters it names, when compiled.
  parseTensorShardingOrThrow(tp.tensor_sharding,
                             where({"execution.tensor_sharding"}));
  if (m.seq_length > m.max_positions)
    throw ConfigError(where({"model.seq_length", "model.max_positions"}) +
                      ": model.seq_length " + std::to_string(m.seq_length) +
                      " exceeds model.max_positions " +
                      std::to_string(m.max_positions) +
                      "; shorten the sequences or raise max_positions");
  if (m.max_predictions > m.seq_length)
    throw ConfigError(
        where({"model.max_predictions", "model.seq_length"}) +
        ": model.max_predictions " + std::to_string(m.max_predictions) +
        " exceeds model.seq_length " + std::to_string(m.seq_length) +
        "; at most one prediction per token");
  if (m.squad() && m.eval_sequence_output)
    throw ConfigError(
        where({"model.task", "model.eval_sequence_output"}) +
        ": model.eval_sequence_output is for the pretraining model's "
        "evaluation (ferry eval --outputs); set it to false for model.task "
        "squad, whose span logits ferry squad predict reads");
  if (m.squad() && m.packed())
    throw ConfigError(
        where({"model.task", "model.max_sequences_per_pack"}) +
        ": model.task squad takes one question a row; set "
        "model.max_sequences_per_pack=1 (packing is for pretraining data)");
  if (m.max_sequences_per_pack * 3 > m.seq_length)
    throw ConfigError(
        where({"model.max_sequences_per_pack", "model.seq_length"}) +
        ": model.max_sequences_per_pack " +
        std::to_string(m.max_sequences_per_pack) +
        " sequences of at least 3 "
        "tokens ([CLS] [SEP] [SEP]) do not fit model.seq_length " +
        std::to_string(m.seq_length) + "; pack fewer sequences a row");

  ExecutionConfig &e = c.execution;
  // A target is a GPU; a custom one names its memory and rates, and only a
  // custom one takes them.
  if (e.target != "none" && e.backend != "cuda")
    throw ConfigError(where({"execution.target", "execution.backend"}) +
                      ": execution.target " + e.target +
                      " is a GPU, but execution.backend is " + e.backend +
                      "; set execution.backend: cuda, or execution.target: "
                      "none");
  struct CustomKey {
    const char *key;
    bool given;
    const char *example;
  };
  const CustomKey customKeys[] = {
      {"execution.target_memory", e.target_memory.has_value(), "80GiB"},
      {"execution.target_bf16_tflops", e.target_bf16_tflops > 0, "790"},
      {"execution.target_fp32_tflops", e.target_fp32_tflops > 0, "50"},
      {"execution.target_memory_gbps", e.target_memory_gbps > 0, "3000"},
      {"execution.target_host_link_gbps", e.target_host_link_gbps > 0, "50"},
  };
  for (const CustomKey &k : customKeys) {
    if (e.target == "custom" && !k.given)
      throw ConfigError(where({"execution.target", k.key}) +
                        ": execution.target: custom needs " + k.key +
                        " (the device's memory and its practical rates); "
                        "set it, e.g. --set " +
                        k.key + "=" + k.example +
                        ", or name a known target (h100, h200)");
    if (e.target != "custom" && k.given)
      throw ConfigError(where({"execution.target", k.key}) + ": " + k.key +
                        " describes a custom target, but execution.target "
                        "is " +
                        e.target +
                        "; set execution.target: custom, or remove " + k.key);
  }
  int64_t global = c.training.global_batch_size;
  auto batchOrigin = [&] {
    return where({"training.global_batch_size", "execution.micro_batch_size",
                  "execution.data_parallel"});
  };
  if (e.micro_batch_size == -1) { // auto: one micro-batch per replica
    if (global % e.data_parallel != 0)
      throw ConfigError(batchOrigin() + ": training.global_batch_size " +
                        std::to_string(global) +
                        " is not divisible by execution.data_parallel " +
                        std::to_string(e.data_parallel) +
                        "; choose a global batch that splits evenly");
    e.micro_batch_size = global / e.data_parallel;
  }
  // Compared by division first, so micro x data_parallel cannot overflow.
  if (e.micro_batch_size > global / e.data_parallel ||
      global % (e.micro_batch_size * e.data_parallel) != 0)
    throw ConfigError(
        batchOrigin() + ": training.global_batch_size " +
        std::to_string(global) +
        " is not divisible by execution.micro_batch_size " +
        std::to_string(e.micro_batch_size) + " x execution.data_parallel " +
        std::to_string(e.data_parallel) +
        "; choose a micro-batch size that divides global_batch_size / "
        "data_parallel");
  if (e.replicated_tensor_sharding && e.data_parallel < 2)
    throw ConfigError(where({"execution.data_parallel",
                             "execution.replicated_tensor_sharding"}) +
                      ": execution.replicated_tensor_sharding needs "
                      "execution.data_parallel >= 2 (found " +
                      std::to_string(e.data_parallel) +
                      "); raise data_parallel or set it to false");
  // auto: bf16 matmuls on the GPU (tensor cores), fp32 on the CPU.
  if (c.training.precision == "auto")
    c.training.precision = c.execution.backend == "cuda" ? "bf16" : "fp32";
  if (c.training.lr_schedule.start_warmup_step > 0)
    throw ConfigError(
        where({"training.lr_schedule.start_warmup_step"}) +
        ": training.lr_schedule.start_warmup_step " +
        std::to_string(c.training.lr_schedule.start_warmup_step) +
        " is positive, which would make the warmup's learning rate negative "
        "for the first updates; use 0, or a negative value to start part-way "
        "through the warmup (MLPerf uses -76)");
  // MLPerf's evaluation interval: floor(0.05 x (230.23 x batch + 3,000,000) /
  // 25,000) x 25,000 samples.
  if (c.training.eval_every_samples == -1)
    c.training.eval_every_samples =
        static_cast<int64_t>(std::floor(
            0.05 * (230.23 * static_cast<double>(global) + 3000000.0) /
            25000.0)) *
        25000;
  if (c.training.eval_every_samples > 0 && c.data.eval_path.empty())
    throw ConfigError(where({"training.eval_every_samples", "data.eval_path"}) +
                      ": training.eval_every_samples " +
                      std::to_string(c.training.eval_every_samples) +
                      " needs data.eval_path (the evaluation set); set it or "
                      "use 0 to train without evaluating");
  if (c.training.target_mlm_accuracy > 0 && c.training.eval_every_samples == 0)
    throw ConfigError(
        where({"training.target_mlm_accuracy", "training.eval_every_samples"}) +
        ": training.target_mlm_accuracy is set but training.eval_every_samples "
        "is 0, so it would never be checked; set eval_every_samples (or "
        "'auto') and data.eval_path");
  if (c.data.path.empty())
    throw ConfigError(where({"data.path"}) +
                      ": data.path is empty; use 'synthetic' or a file, "
                      "directory or glob of training data");

  // The largest tensors the model declares or computes must be representable.
  using u128 = unsigned __int128;
  struct Extent {
    const char *what;
    u128 elements;
  };
  const Extent extents[] = {
      {"the word embedding (vocab x hidden)",
       static_cast<u128>(m.paddedVocabSize()) * m.hidden_size},
      {"the stacked FFN weights (layers x ffn x hidden)",
       static_cast<u128>(m.layers) * m.ffn_size * m.hidden_size},
      {"the attention scores (micro-batch x heads x seq x seq)",
       static_cast<u128>(e.micro_batch_size) * m.num_heads * m.seq_length *
           m.seq_length},
      {"the MLM logits (micro-batch x predictions x vocab)",
       static_cast<u128>(e.micro_batch_size) * m.max_predictions *
           m.paddedVocabSize()},
  };
  for (const Extent &x : extents)
    if (x.elements > kMaxTensorElements)
      throw ConfigError(
          where({"model.layers", "model.hidden_size", "model.num_heads",
                 "model.ffn_size", "model.vocab_size", "model.seq_length",
                 "model.max_predictions", "execution.micro_batch_size"}) +
          ": " + x.what +
          " would exceed 2^40 elements; reduce the model or "
          "micro-batch size");
}

} // namespace ferry::config_detail
