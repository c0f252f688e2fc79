// Tensor parallelism's parameter sharding from the config (TensorSharding.h).
#include "training/config/TensorSharding.h"

#include <cctype>
#include <cstdlib>
#include <numeric>

namespace ferry {

std::vector<ShardingRule> defaultTensorSharding(bool mlmHead) {
  std::vector<ShardingRule> rules = {
      {"layer.attention.query.*", 0},
      {"layer.attention.key.*", 0},
      {"layer.attention.value.*", 0},
      {"layer.ffn.intermediate.*", 0},
      {"layer.attention.output.weight", 1},
      {"layer.ffn.output.weight", 1},
      // The word embedding and the tied MLM head: vocabulary-parallel.
      {"embeddings.word", 0},
  };
  if (mlmHead)
    rules.push_back({"mlm.decoder.bias", 0});
  return rules;
}

namespace {

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return s.substr(b, e - b);
}

} // namespace

std::string parseTensorSharding(const std::string &text,
                                std::vector<ShardingRule> &rules) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string entry = trim(text.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (entry.empty())
      continue;
    auto bad = [&](const std::string &why) {
      return std::string(
          "execution.tensor_sharding entry '" + entry + "' " + why +
          "; write PATTERN=split(D) or PATTERN=replicated, entries separated "
          "by commas (e.g. \"layer.ffn.*=replicated, "
          "layer.attention.query.weight=split(0)\")");
    };
    size_t eq = entry.find('=');
    if (eq == std::string::npos)
      return bad("has no '='");
    ShardingRule rule;
    rule.pattern = trim(entry.substr(0, eq));
    std::string sharding = trim(entry.substr(eq + 1));
    if (rule.pattern.empty())
      return bad("has no parameter-name pattern");
    if (sharding == "replicated") {
      rules.push_back(rule);
      continue;
    }
    if (sharding.rfind("split(", 0) != 0 || sharding.back() != ')')
      return bad("has the sharding '" + sharding + "'");
    std::string digits = sharding.substr(6, sharding.size() - 7);
    char *end = nullptr;
    long long d = std::strtoll(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0' || d < 0 || d > 7)
      return bad("splits dimension '" + digits +
                 "', which is not a dimension number (0 to 7)");
    rule.splitDim = d;
    rules.push_back(rule);
  }
  return "";
}

std::vector<ShardingRule>
parseTensorShardingOrThrow(const std::string &text, const std::string &origin) {
  std::vector<ShardingRule> rules;
  std::string error = parseTensorSharding(text, rules);
  if (!error.empty())
    throw ConfigError(origin + ": " + error);
  return rules;
}

std::vector<ShardingRule> tensorShardingRules(const Config &config) {
  std::vector<ShardingRule> rules =
      defaultTensorSharding(/*mlmHead=*/!config.model.squad());
  std::vector<ShardingRule> overrides = parseTensorShardingOrThrow(
      config.execution.tensor_sharding, config.source);
  rules.insert(rules.end(), overrides.begin(), overrides.end());
  return rules;
}

std::string formatShardingRule(const ShardingRule &rule) {
  return rule.pattern + "=" +
         (rule.splitDim ? "split(" + std::to_string(*rule.splitDim) + ")"
                        : std::string("replicated"));
}

bool globMatches(const std::string &pattern, const std::string &name) {
  // Iterative wildcard match with one backtrack point (the last `*`).
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

std::string nearestValidTensorParallel(const ModelConfig &model, int64_t t,
                                       bool sequenceParallel) {
  int64_t g = std::gcd(model.num_heads, model.ffn_size);
  if (sequenceParallel)
    g = std::gcd(g, model.seq_length);
  int64_t below = 1, above = 0;
  for (int64_t d = 1; d <= g; ++d) {
    if (g % d != 0)
      continue;
    if (d <= t)
      below = d;
    else if (above == 0)
      above = d;
  }
  if (above == 0 || t - below < above - t)
    return std::to_string(below);
  if (above - t < t - below)
    return std::to_string(above);
  return std::to_string(below) + " or " + std::to_string(above);
}

} // namespace ferry
