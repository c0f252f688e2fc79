// Tensor parallelism's sharding of the parameters, as the config gives it
// (docs/parallelism.md): BERT's default is Megatron's layout, and
// execution.tensor_sharding overrides it per parameter-name pattern. The
// layout lives here, in the config layer: the BERT builder knows nothing of
// tensor parallelism, and the compiler's ferry-shard-parameters pass applies
// these rules to the declarations by name.
//
// Syntax of execution.tensor_sharding: comma-separated PATTERN=SHARDING,
//   PATTERN   a glob over ferry's parameter names (`ferry inspect` lists
//             them): `*` any characters, `?` one; e.g. layer.ffn.*.weight
//   SHARDING  split(D): dimension D of one layer's tensor (Hugging Face's
//             shape: a dense weight is [out, in]) in T equal parts;
//             replicated: every rank holds the whole tensor.
// Later rules win over earlier ones, and the overrides over the default.
#pragma once

#include "training/config/Config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ferry {

struct ShardingRule {
  std::string pattern;
  std::optional<int64_t> splitDim; // nullopt: replicated
};

// Megatron's layout of BERT's encoder layer: Q, K, V and the first FFN
// matmul column-parallel (the output dimension and the bias split), the
// attention output and the second FFN matmul row-parallel (the input
// dimension split; their biases replicated, added after the reduction);
// and the word embedding and the MLM decoder bias (the tied MLM head)
// vocabulary-parallel, the latter only where the task has that head
// (pretraining: `mlmHead`).
std::vector<ShardingRule> defaultTensorSharding(bool mlmHead = true);

// Parses execution.tensor_sharding into `rules` (appended). Returns "" or
// the error: the entry and the accepted syntax. Throws nothing (the
// compiler's passes build without exceptions).
std::string parseTensorSharding(const std::string &text,
                                std::vector<ShardingRule> &rules);

// The same, throwing ConfigError prefixed with `origin`.
std::vector<ShardingRule> parseTensorShardingOrThrow(const std::string &text,
                                                     const std::string &origin);

// The rules a compile applies: the default (for the config's task), then
// the config's overrides.
std::vector<ShardingRule> tensorShardingRules(const Config &config);

// "PATTERN=split(D)" or "PATTERN=replicated", as parseTensorSharding reads.
std::string formatShardingRule(const ShardingRule &rule);

// Whether `name` matches the glob `pattern` (`*` any run, `?` one char).
bool globMatches(const std::string &pattern, const std::string &name);

// The tensor-parallel sizes that divide every split dimension of the
// default layout (the heads and the FFN size, and with sequence parallelism
// the sequence): for error messages, the valid T nearest to `t` (one or two
// values, "4 or 6").
std::string nearestValidTensorParallel(const ModelConfig &model, int64_t t,
                                       bool sequenceParallel = false);

} // namespace ferry
