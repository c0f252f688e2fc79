// Loading and validating configs: one schema table below lists every key with
// its type, its default and where it lands in Config. Everything else (YAML
// walking, --set overrides, did-you-mean, type checks, the canonical form) is
// driven by that table, so adding a key is one line.
#include "training/config/Config.h"
#include "runtime/ByteSize.h"
#include "training/config/ConfigInternal.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace ferry {
using config_detail::Raw;
using config_detail::validateRelations;

namespace {

// ---------------------------------------------------------------------------
// The schema
// ---------------------------------------------------------------------------

enum class Kind {
  PositiveInt,          // >= 1
  NonNegativeInt,       // >= 0
  Int,                  // any integer
  AutoOrPositiveInt,    // "auto" or >= 1
  AutoOrNonNegativeInt, // "auto" or >= 0
  Probability,          // [0, 1)
  PositiveFloat,        // > 0
  NonNegativeFloat,     // >= 0
  Bool,
  Choice, // one of `choices`
  Size,   // "unlimited" or a byte size
  Text,   // any string; null = ""
};

// The largest size or count a key accepts (2^31 - 1).
constexpr int64_t kMaxCount = 2147483647;

// A typed value; which member is meaningful depends on the key's Kind.
struct Value {
  int64_t i = 0;                // ints; -1 = "auto" for AutoOr*Int
  double f = 0;                 // floats
  bool b = false;               // bools
  std::string s;                // choices, text
  std::optional<uint64_t> size; // sizes; nullopt = unlimited
};

struct KeyDef {
  const char *key;
  KeyStage stage; // when it takes effect (Config.h)
  Kind kind;
  const char *defaultText; // nullptr: the key is required
  std::vector<std::string> choices;
  void (*set)(Config &, const Value &);
  Value (*get)(const Config &);
};

// The setter and getter of a key whose Config member is `member`, held in
// Value::slot (i, f, b or s).
#define FERRY_FIELD(member, slot)                                              \
  [](Config &c, const Value &v) { c.member = v.slot; }, [](const Config &c) {  \
    Value v;                                                                   \
    v.slot = c.member;                                                         \
    return v;                                                                  \
  }
#define FERRY_INT(member) FERRY_FIELD(member, i)
#define FERRY_FLOAT(member) FERRY_FIELD(member, f)
#define FERRY_BOOL(member) FERRY_FIELD(member, b)
#define FERRY_STRING(member) FERRY_FIELD(member, s)

// Defaults apply to keys a preset leaves out; presets set the model shape
// (which has no default) and state their training choices explicitly.
const std::vector<KeyDef> &schema() {
  // One row per entry reads better than wrapped calls.
  // clang-format off
  static const std::vector<KeyDef> keys = {
      {"model.layers", KeyStage::Compile, Kind::PositiveInt, nullptr, {}, FERRY_INT(model.layers)},
      {"model.hidden_size", KeyStage::Compile, Kind::PositiveInt, nullptr, {}, FERRY_INT(model.hidden_size)},
      {"model.num_heads", KeyStage::Compile, Kind::PositiveInt, nullptr, {}, FERRY_INT(model.num_heads)},
      {"model.ffn_size", KeyStage::Compile, Kind::PositiveInt, nullptr, {}, FERRY_INT(model.ffn_size)},
      {"model.vocab_size", KeyStage::Compile, Kind::PositiveInt, "30522", {}, FERRY_INT(model.vocab_size)},
      {"model.max_positions", KeyStage::Compile, Kind::PositiveInt, "512", {}, FERRY_INT(model.max_positions)},
      {"model.type_vocab_size", KeyStage::Compile, Kind::PositiveInt, "2", {}, FERRY_INT(model.type_vocab_size)},
      {"model.seq_length", KeyStage::Compile, Kind::PositiveInt, nullptr, {}, FERRY_INT(model.seq_length)},
      {"model.max_predictions", KeyStage::Compile, Kind::PositiveInt, nullptr, {}, FERRY_INT(model.max_predictions)},
      {"model.max_sequences_per_pack", KeyStage::Compile, Kind::PositiveInt, "1", {}, FERRY_INT(model.max_sequences_per_pack)},
      {"model.task", KeyStage::Compile, Kind::Choice, "pretraining", {"pretraining", "squad"}, FERRY_STRING(model.task)},
      {"model.hidden_dropout", KeyStage::Compile, Kind::Probability, "0.1", {}, FERRY_FLOAT(model.hidden_dropout)},
      {"model.attention_dropout", KeyStage::Compile, Kind::Probability, "0.1", {}, FERRY_FLOAT(model.attention_dropout)},
      {"model.layer_norm_eps", KeyStage::Compile, Kind::PositiveFloat, "1e-12", {}, FERRY_FLOAT(model.layer_norm_eps)},
      {"model.eval_sequence_output", KeyStage::Compile, Kind::Bool, "false", {}, FERRY_BOOL(model.eval_sequence_output)},

      {"training.global_batch_size", KeyStage::Compile, Kind::PositiveInt, nullptr, {}, FERRY_INT(training.global_batch_size)},
      {"training.steps", KeyStage::RunAnyTime, Kind::PositiveInt, nullptr, {}, FERRY_INT(training.steps)},
      {"training.seed", KeyStage::Compile, Kind::Int, "42", {}, FERRY_INT(training.seed)},
      {"training.precision", KeyStage::Compile, Kind::Choice, "auto", {"auto", "fp32", "bf16", "fp16"}, FERRY_STRING(training.precision)},
      {"training.bf16_activations", KeyStage::Compile, Kind::Bool, "true", {}, FERRY_BOOL(training.bf16_activations)},
      {"training.bf16_weight_copies", KeyStage::Compile, Kind::Bool, "true", {}, FERRY_BOOL(training.bf16_weight_copies)},
      {"training.loss_scale_initial", KeyStage::Compile, Kind::PositiveFloat, "65536", {}, FERRY_FLOAT(training.loss_scale_initial)},
      {"training.loss_scale_growth_interval", KeyStage::Compile, Kind::PositiveInt, "2000", {}, FERRY_INT(training.loss_scale_growth_interval)},
      {"training.loss_scale_min", KeyStage::Compile, Kind::PositiveFloat, "1", {}, FERRY_FLOAT(training.loss_scale_min)},
      {"training.optimizer.name", KeyStage::Compile, Kind::Choice, "lamb", {"lamb", "adamw"}, FERRY_STRING(training.optimizer.name)},
      {"training.optimizer.lr", KeyStage::Compile, Kind::NonNegativeFloat, nullptr, {}, FERRY_FLOAT(training.optimizer.lr)},
      {"training.optimizer.beta1", KeyStage::Compile, Kind::Probability, "0.9", {}, FERRY_FLOAT(training.optimizer.beta1)},
      {"training.optimizer.beta2", KeyStage::Compile, Kind::Probability, "0.999", {}, FERRY_FLOAT(training.optimizer.beta2)},
      {"training.optimizer.epsilon", KeyStage::Compile, Kind::PositiveFloat, "1e-6", {}, FERRY_FLOAT(training.optimizer.epsilon)},
      {"training.optimizer.weight_decay", KeyStage::Compile, Kind::NonNegativeFloat, "0.01", {}, FERRY_FLOAT(training.optimizer.weight_decay)},
      {"training.optimizer.clip_norm", KeyStage::Compile, Kind::NonNegativeFloat, "1.0", {}, FERRY_FLOAT(training.optimizer.clip_norm)},
      {"training.lr_schedule.kind", KeyStage::Compile, Kind::Choice, "poly", {"poly", "constant"}, FERRY_STRING(training.lr_schedule.kind)},
      {"training.lr_schedule.warmup_steps", KeyStage::Compile, Kind::NonNegativeInt, "0", {}, FERRY_INT(training.lr_schedule.warmup_steps)},
      {"training.lr_schedule.start_warmup_step", KeyStage::Compile, Kind::Int, "0", {}, FERRY_INT(training.lr_schedule.start_warmup_step)},
      {"training.lr_schedule.power", KeyStage::Compile, Kind::NonNegativeFloat, "1.0", {}, FERRY_FLOAT(training.lr_schedule.power)},
      {"training.lr_schedule.total_steps", KeyStage::Compile, Kind::PositiveInt, nullptr, {}, FERRY_INT(training.lr_schedule.total_steps)},
      {"training.eval_every_samples", KeyStage::RunAnyTime, Kind::AutoOrNonNegativeInt, "0", {}, FERRY_INT(training.eval_every_samples)},
      {"training.target_mlm_accuracy", KeyStage::RunAnyTime, Kind::Probability, "0", {}, FERRY_FLOAT(training.target_mlm_accuracy)},

      {"execution.mode", KeyStage::Compile, Kind::Choice, "resident", {"resident", "phased"}, FERRY_STRING(execution.mode)},
      {"execution.backend", KeyStage::Compile, Kind::Choice, "cpu", {"cpu", "cuda"}, FERRY_STRING(execution.backend)},
      {"execution.micro_batch_size", KeyStage::Compile, Kind::AutoOrPositiveInt, "auto", {}, FERRY_INT(execution.micro_batch_size)},
      {"execution.recompute", KeyStage::Compile, Kind::Choice, "none", {"none", "layer"}, FERRY_STRING(execution.recompute)},
      {"execution.device_memory_limit", KeyStage::RunAnyTime, Kind::Size, "unlimited", {}, FERRY_FIELD(execution.device_memory_limit, size)},
      {"execution.target", KeyStage::Compile, Kind::Choice, "none", {"none", "h100", "h200", "custom"}, FERRY_STRING(execution.target)},
      {"execution.target_memory", KeyStage::Compile, Kind::Size, "unlimited", {}, FERRY_FIELD(execution.target_memory, size)},
      {"execution.target_bf16_tflops", KeyStage::Compile, Kind::NonNegativeFloat, "0", {}, FERRY_FLOAT(execution.target_bf16_tflops)},
      {"execution.target_fp32_tflops", KeyStage::Compile, Kind::NonNegativeFloat, "0", {}, FERRY_FLOAT(execution.target_fp32_tflops)},
      {"execution.target_memory_gbps", KeyStage::Compile, Kind::NonNegativeFloat, "0", {}, FERRY_FLOAT(execution.target_memory_gbps)},
      {"execution.target_host_link_gbps", KeyStage::Compile, Kind::NonNegativeFloat, "0", {}, FERRY_FLOAT(execution.target_host_link_gbps)},
      {"execution.prefetch", KeyStage::Compile, Kind::Bool, "true", {}, FERRY_BOOL(execution.prefetch)},
      {"execution.fusion", KeyStage::Compile, Kind::Bool, "true", {}, FERRY_BOOL(execution.fusion)},
      {"execution.cuda_graphs", KeyStage::RunAnyTime, Kind::Bool, "true", {}, FERRY_BOOL(execution.cuda_graphs)},
      {"execution.data_parallel", KeyStage::Compile, Kind::PositiveInt, "1", {}, FERRY_INT(execution.data_parallel)},
      {"execution.tensor_parallel", KeyStage::Compile, Kind::PositiveInt, "1", {}, FERRY_INT(execution.tensor_parallel)},
      {"execution.tensor_sharding", KeyStage::Compile, Kind::Text, "", {}, FERRY_STRING(execution.tensor_sharding)},
      {"execution.sequence_parallel", KeyStage::Compile, Kind::Bool, "false", {}, FERRY_BOOL(execution.sequence_parallel)},
      {"execution.replicated_tensor_sharding", KeyStage::Compile, Kind::Bool, "false", {}, FERRY_BOOL(execution.replicated_tensor_sharding)},
      {"execution.rts_min_elements", KeyStage::Compile, Kind::PositiveInt, "1024", {}, FERRY_INT(execution.rts_min_elements)},
      {"execution.collective_timeout_seconds", KeyStage::RunAnyTime, Kind::PositiveFloat, "300", {}, FERRY_FLOAT(execution.collective_timeout_seconds)},

      {"data.path", KeyStage::Run, Kind::Text, "synthetic", {}, FERRY_STRING(data.path)},
      {"data.format", KeyStage::Run, Kind::Choice, "auto", {"auto", "hdf5", "tfrecord"}, FERRY_STRING(data.format)},
      {"data.shuffle", KeyStage::Run, Kind::Bool, "true", {}, FERRY_BOOL(data.shuffle)},
      {"data.synthetic_samples", KeyStage::Run, Kind::PositiveInt, "1024", {}, FERRY_INT(data.synthetic_samples)},
      {"data.eval_path", KeyStage::RunAnyTime, Kind::Text, "", {}, FERRY_STRING(data.eval_path)},
      {"data.eval_samples", KeyStage::RunAnyTime, Kind::NonNegativeInt, "0", {}, FERRY_INT(data.eval_samples)},

      {"checkpoint.init", KeyStage::RunAnyTime, Kind::Text, "", {}, FERRY_STRING(checkpoint.init)},
      {"checkpoint.save_dir", KeyStage::RunAnyTime, Kind::Text, "", {}, FERRY_STRING(checkpoint.save_dir)},
      {"checkpoint.every_steps", KeyStage::RunAnyTime, Kind::NonNegativeInt, "0", {}, FERRY_INT(checkpoint.every_steps)},
      {"checkpoint.keep", KeyStage::RunAnyTime, Kind::PositiveInt, "3", {}, FERRY_INT(checkpoint.keep)},
  };
  // clang-format on
  return keys;
}

#undef FERRY_INT
#undef FERRY_FLOAT
#undef FERRY_BOOL
#undef FERRY_STRING
#undef FERRY_FIELD

// Mappings that hold keys rather than values.
const std::vector<std::string> &sections() {
  static const std::vector<std::string> names = {
      "model",     "training", "training.optimizer", "training.lr_schedule",
      "execution", "data",     "checkpoint"};
  return names;
}

const KeyDef *findKey(const std::string &key) {
  for (const KeyDef &def : schema())
    if (key == def.key)
      return &def;
  return nullptr;
}

bool isSection(const std::string &key) {
  return std::find(sections().begin(), sections().end(), key) !=
         sections().end();
}

// ---------------------------------------------------------------------------
// Did-you-mean. Hand-written because the config library must not link LLVM
// (the runtime uses it), and a 15-line edit distance is not worth a dependency.
// ---------------------------------------------------------------------------

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string leafOf(const std::string &key) {
  size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

// The closest candidate, if it is close enough to be a plausible typo; a
// candidate whose last component equals the unknown key's is also taken (a key
// written in the wrong section).
std::string suggest(const std::string &unknown,
                    const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestDistance = std::string::npos;
  for (const std::string &candidate : candidates) {
    size_t d = editDistance(unknown, candidate);
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  size_t limit = std::max<size_t>(2, unknown.size() / 3);
  if (bestDistance <= limit)
    return best;
  for (const std::string &candidate : candidates)
    if (leafOf(candidate) == leafOf(unknown))
      return candidate;
  return "";
}

std::string didYouMean(const std::string &unknown,
                       const std::vector<std::string> &candidates) {
  std::string s = suggest(unknown, candidates);
  return s.empty() ? "" : "; did you mean '" + s + "'?";
}

// ---------------------------------------------------------------------------
// Raw values, as written in the file or on the command line
// ---------------------------------------------------------------------------

// A YAML double-quoted scalar that reads back as `s`: quotes, backslashes
// and control characters escaped (a save_dir holding a newline once printed
// a config that did not parse; the config fuzz target found it).
std::string quote(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20 || c == 0x7f) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
        out += escaped;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

std::string markOf(const std::string &source, const YAML::Mark &mark) {
  if (mark.is_null())
    return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" +
         std::to_string(mark.column + 1);
}

// Where each key and section was first written, so a second one is an error
// (yaml-cpp keeps both entries of a mapping that repeats a key, and the later
// one would silently win).
using FirstSeen = std::map<std::string, std::string>;

void collect(const YAML::Node &node, const std::string &prefix,
             const std::string &source, std::map<std::string, Raw> &raw,
             FirstSeen &seen) {
  for (const auto &item : node) {
    std::string name = item.first.as<std::string>();
    std::string key = prefix.empty() ? name : prefix + "." + name;
    const YAML::Node &value = item.second;
    std::string where = markOf(source, item.first.Mark());
    auto [first, inserted] = seen.emplace(key, where);
    if (!inserted) {
      bool section = isSection(key);
      throw ConfigError(
          where + ": " + (section ? "section '" : "key '") + key +
          "' is given twice in one file (first at " + first->second + "); " +
          (section ? "merge the two '" + name + ":' blocks into one"
                   : "keep one of them (for a one-off change use --set " + key +
                         "=VALUE)"));
    }
    if (isSection(key)) {
      if (!value.IsMap())
        throw ConfigError(where + ": '" + key +
                          "' must be a mapping of keys (e.g. '" + key +
                          ":' followed by indented 'key: value' lines)");
      collect(value, key, source, raw, seen);
      continue;
    }
    const KeyDef *def = findKey(key);
    if (!def) {
      std::vector<std::string> candidates = configKeys();
      candidates.insert(candidates.end(), sections().begin(), sections().end());
      throw ConfigError(where + ": unknown key '" + key + "'" +
                        didYouMean(key, candidates));
    }
    if (!value.IsScalar() && !value.IsNull())
      throw ConfigError(where + ": " + key +
                        " expects a single value, found a " +
                        (value.IsMap() ? "mapping" : "list"));
    Raw r;
    r.null = value.IsNull();
    r.text = r.null ? "" : value.Scalar();
    r.origin = where;
    raw[key] = r;
  }
}

// "--set key=value"
void applyOverride(const std::string &assignment,
                   std::map<std::string, Raw> &raw) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set " + assignment +
                      ": expected KEY=VALUE, e.g. --set model.layers=4");
  std::string key = assignment.substr(0, eq);
  std::string text = assignment.substr(eq + 1);
  if (!findKey(key)) {
    std::vector<std::string> keys = configKeys();
    if (isSection(key)) {
      // Every section holds at least one key; name its first as an example.
      auto first =
          std::find_if(keys.begin(), keys.end(), [&](const std::string &k) {
            return k.rfind(key + ".", 0) == 0;
          });
      throw ConfigError("--set " + assignment + ": '" + key +
                        "' is a section; set one of its keys, e.g. --set " +
                        *first + "=...");
    }
    throw ConfigError("--set " + assignment + ": unknown key '" + key + "'" +
                      didYouMean(key, keys));
  }
  Raw r;
  r.text = text;
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front())
    r.text = text.substr(1, text.size() - 2);
  r.null = text.empty() || text == "null" || text == "~";
  r.origin = "--set " + assignment;
  raw[key] = r;
}

// ---------------------------------------------------------------------------
// Typed values
// ---------------------------------------------------------------------------

bool parseInt(const std::string &text, int64_t &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  out = v;
  return true;
}

bool parseFloat(const std::string &text, double &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v))
    return false;
  out = v;
  return true;
}

std::string lower(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string describe(const KeyDef &def) {
  switch (def.kind) {
  case Kind::PositiveInt:
    return "a positive integer";
  case Kind::NonNegativeInt:
    return "an integer >= 0";
  case Kind::Int:
    return "an integer";
  case Kind::AutoOrPositiveInt:
    return "'auto' or a positive integer";
  case Kind::AutoOrNonNegativeInt:
    return "'auto' or an integer >= 0";
  case Kind::Probability:
    return "a number in [0, 1)";
  case Kind::PositiveFloat:
    return "a number > 0";
  case Kind::NonNegativeFloat:
    return "a number >= 0";
  case Kind::Bool:
    return "true or false";
  case Kind::Choice: {
    std::string s = "one of";
    for (size_t i = 0; i < def.choices.size(); ++i)
      s += (i ? ", " : " ") + def.choices[i];
    return s;
  }
  case Kind::Size:
    return "'unlimited' or a size such as \"8GiB\", \"512MiB\" or a byte count";
  case Kind::Text:
    return "a string";
  }
  return "a value";
}

Value convert(const KeyDef &def, const Raw &raw) {
  auto fail = [&](const std::string &extra = "") -> Value {
    throw ConfigError(
        raw.origin + ": " + def.key + " expects " + describe(def) + ", found " +
        (raw.null ? std::string("no value") : quote(raw.text)) + extra);
  };
  Value v;
  if (raw.null) {
    if (def.kind == Kind::Text)
      return v;
    return fail();
  }
  const std::string &t = raw.text;
  switch (def.kind) {
  case Kind::AutoOrPositiveInt:
  case Kind::AutoOrNonNegativeInt:
    if (t == "auto") {
      v.i = -1;
      return v;
    }
    [[fallthrough]];
  case Kind::PositiveInt:
  case Kind::NonNegativeInt:
  case Kind::Int: {
    if (!parseInt(t, v.i))
      return fail();
    if ((def.kind == Kind::PositiveInt ||
         def.kind == Kind::AutoOrPositiveInt) &&
        v.i < 1)
      return fail();
    if ((def.kind == Kind::NonNegativeInt ||
         def.kind == Kind::AutoOrNonNegativeInt) &&
        v.i < 0)
      return fail();
    // Sizes and counts stay far from int64 overflow in every product the
    // compiler forms from them.
    if (def.kind != Kind::Int && v.i > kMaxCount)
      return fail("; at most " + std::to_string(kMaxCount));
    return v;
  }
  case Kind::Probability:
  case Kind::PositiveFloat:
  case Kind::NonNegativeFloat: {
    if (!parseFloat(t, v.f))
      return fail();
    bool ok = def.kind == Kind::Probability     ? (v.f >= 0 && v.f < 1)
              : def.kind == Kind::PositiveFloat ? v.f > 0
                                                : v.f >= 0;
    if (!ok)
      return fail();
    return v;
  }
  case Kind::Bool: {
    std::string l = lower(t);
    if (l == "true" || l == "yes" || l == "on")
      v.b = true;
    else if (l == "false" || l == "no" || l == "off")
      v.b = false;
    else
      return fail();
    return v;
  }
  case Kind::Choice:
    if (std::find(def.choices.begin(), def.choices.end(), t) ==
        def.choices.end())
      return fail(didYouMean(t, def.choices));
    v.s = t;
    return v;
  case Kind::Size: {
    if (t == "unlimited")
      return v;
    v.size = parseByteSize(t);
    if (!v.size || *v.size == 0)
      return fail();
    return v;
  }
  case Kind::Text:
    v.s = t;
    return v;
  }
  return fail();
}

std::string render(Kind kind, const Value &v) {
  switch (kind) {
  case Kind::PositiveInt:
  case Kind::NonNegativeInt:
  case Kind::Int:
  case Kind::AutoOrPositiveInt:
  case Kind::AutoOrNonNegativeInt:
    return std::to_string(v.i);
  case Kind::Probability:
  case Kind::PositiveFloat:
  case Kind::NonNegativeFloat: {
    std::ostringstream os;
    os.precision(17);
    os << v.f;
    return os.str();
  }
  case Kind::Bool:
    return v.b ? "true" : "false";
  case Kind::Size:
    return v.size ? std::to_string(*v.size) : "unlimited";
  case Kind::Choice:
  case Kind::Text:
    return quote(v.s);
  }
  return "";
}

} // namespace

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

std::optional<KeyStage> keyStage(const std::string &key) {
  for (const KeyDef &def : schema())
    if (key == def.key)
      return def.stage;
  return std::nullopt;
}

std::vector<std::string> configKeys() {
  std::vector<std::string> keys;
  for (const KeyDef &def : schema())
    keys.push_back(def.key);
  return keys;
}

std::string Config::canonicalText() const {
  std::string out;
  for (const KeyDef &def : schema())
    out +=
        std::string(def.key) + ": " + render(def.kind, def.get(*this)) + "\n";
  return out;
}

std::string Config::yamlText() const {
  // Keys are grouped by section in schema order, so a stack of the open
  // sections is enough to nest them.
  std::string out;
  std::vector<std::string> open;
  for (const KeyDef &def : schema()) {
    std::vector<std::string> parts;
    std::string key = def.key;
    for (size_t start = 0;;) {
      size_t dot = key.find('.', start);
      parts.push_back(key.substr(start, dot - start));
      if (dot == std::string::npos)
        break;
      start = dot + 1;
    }
    size_t common = 0;
    while (common < open.size() && common + 1 < parts.size() &&
           open[common] == parts[common])
      ++common;
    open.resize(common);
    for (size_t i = common; i + 1 < parts.size(); ++i) {
      out += std::string(2 * i, ' ') + parts[i] + ":\n";
      open.push_back(parts[i]);
    }
    out += std::string(2 * (parts.size() - 1), ' ') + parts.back() + ": " +
           render(def.kind, def.get(*this)) + "\n";
  }
  return out;
}

Config parseConfig(const std::string &yamlText, const std::string &sourceName,
                   const std::vector<std::string> &overrides) {
  std::map<std::string, Raw> raw;
  YAML::Node root;
  try {
    root = YAML::Load(yamlText);
  } catch (const YAML::Exception &e) {
    throw ConfigError(markOf(sourceName, e.mark) +
                      ": not valid YAML: " + e.msg +
                      "; fix the syntax there (indentation, a closing "
                      "bracket or quote)");
  }
  if (root.IsDefined() && !root.IsNull()) {
    if (!root.IsMap())
      throw ConfigError(sourceName +
                        ": expected a mapping with the sections model, "
                        "training, execution, data, checkpoint");
    try {
      FirstSeen seen;
      collect(root, "", sourceName, raw, seen);
    } catch (const YAML::Exception &e) {
      throw ConfigError(markOf(sourceName, e.mark) + ": " + e.msg);
    }
  }
  for (const std::string &assignment : overrides)
    applyOverride(assignment, raw);

  Config config;
  config.source = sourceName;
  for (const KeyDef &def : schema()) {
    auto it = raw.find(def.key);
    Raw r;
    if (it != raw.end()) {
      r = it->second;
    } else if (def.defaultText) {
      r.text = def.defaultText;
      r.origin = sourceName + " (default)";
    } else {
      throw ConfigError(sourceName + ": missing required key " + def.key +
                        " (" + describe(def) +
                        "); add it to the file or pass --set " + def.key +
                        "=VALUE");
    }
    def.set(config, convert(def, r));
  }
  validateRelations(config, raw);
  return config;
}

Config loadConfig(const std::string &path,
                  const std::vector<std::string> &overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ConfigError(
        path + ": cannot open the config file (" +
        std::string(std::strerror(errno)) +
        "); presets live in configs/, e.g. configs/bert-tiny.yaml");
  std::ostringstream text;
  text << in.rdbuf();
  return parseConfig(text.str(), path, overrides);
}

} // namespace ferry
