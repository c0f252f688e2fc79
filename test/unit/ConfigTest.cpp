// Config loading and validation: every preset loads, overrides apply, and each
// kind of bad input fails with a message that names where, what and the fix.
#include "training/config/Config.h"
#include "runtime/ByteSize.h"
#include "training/config/TensorSharding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <string>
#include <vector>

using ferry::Config;
using ferry::ConfigError;
using ferry::parseConfig;

namespace {

// A complete config with every key set, so tests depend on no default.
const char *kFull = R"(model:
  layers: 2
  hidden_size: 64
  num_heads: 4
  ffn_size: 256
  vocab_size: 1000
  max_positions: 128
  type_vocab_size: 2
  seq_length: 64
  max_predictions: 10
  hidden_dropout: 0.1
  attention_dropout: 0.1
  layer_norm_eps: 1.0e-12
training:
  global_batch_size: 32
  steps: 10
  seed: 7
  precision: fp32
  optimizer: {name: adamw, lr: 1.0e-3, beta1: 0.9, beta2: 0.999, epsilon: 1.0e-6, weight_decay: 0.01, clip_norm: 1.0}
  lr_schedule: {kind: poly, warmup_steps: 2, start_warmup_step: 0, power: 1.0, total_steps: 10}
execution:
  mode: resident
  backend: cpu
  micro_batch_size: 8
  recompute: none
  device_memory_limit: unlimited
  data_parallel: 2
  replicated_tensor_sharding: false
data: {path: synthetic, format: auto, shuffle: false}
checkpoint: {init: "", save_dir: "", every_steps: 0, keep: 3}
)";

// The message of the ConfigError that parsing throws, or "" if none.
std::string errorOf(const std::string &yaml,
                    const std::vector<std::string> &overrides = {}) {
  try {
    parseConfig(yaml, "test.yaml", overrides);
  } catch (const ConfigError &e) {
    return e.what();
  }
  return "";
}

std::string errorOfOverride(const std::string &assignment) {
  return errorOf(kFull, {assignment});
}

} // namespace

TEST(Config, FullConfigParses) {
  Config c = parseConfig(kFull, "test.yaml");
  EXPECT_EQ(c.model.layers, 2);
  EXPECT_EQ(c.model.hidden_size, 64);
  EXPECT_EQ(c.model.headSize(), 16);
  EXPECT_EQ(c.model.vocab_size, 1000);
  EXPECT_EQ(c.model.paddedVocabSize(), 1000);
  EXPECT_DOUBLE_EQ(c.model.layer_norm_eps, 1e-12);
  EXPECT_EQ(c.training.optimizer.name, "adamw");
  EXPECT_DOUBLE_EQ(c.training.optimizer.lr, 1e-3);
  EXPECT_EQ(c.training.lr_schedule.warmup_steps, 2);
  EXPECT_EQ(c.execution.micro_batch_size, 8);
  EXPECT_EQ(c.execution.data_parallel, 2);
  EXPECT_EQ(c.gradientAccumulation(), 2);
  EXPECT_FALSE(c.execution.device_memory_limit.has_value());
  EXPECT_FALSE(c.data.shuffle);
  EXPECT_EQ(c.checkpoint.keep, 3);
}

// The printed config parses back to itself, whatever a string holds (the
// config fuzz target found a save_dir with a newline that printed a config
// that did not parse).
TEST(Config, PrintedStringsParseBackWithQuotesNewlinesAndControls) {
  const std::string awkward = "a\"b\\c\nd\te\x01f: {g} #h \xc3\xa9";
  Config c = parseConfig(kFull, "test.yaml");
  c.checkpoint.save_dir = awkward;
  Config again = parseConfig(c.yamlText(), "printed.yaml");
  EXPECT_EQ(again.checkpoint.save_dir, awkward);
  EXPECT_EQ(again.canonicalText(), c.canonicalText());
}

TEST(Config, EveryPresetLoads) {
  for (const char *name :
       {"bert-tiny", "bert-mini", "bert-base", "bert-large", "bert-base-512",
        "bert-large-512", "squad-bert-base", "squad-bert-large"}) {
    SCOPED_TRACE(name);
    Config c = ferry::loadConfig(std::string(FERRY_SOURCE_DIR) + "/configs/" +
                                 name + ".yaml");
    EXPECT_EQ(c.model.hidden_size % c.model.num_heads, 0);
    EXPECT_EQ(c.model.paddedVocabSize(), 30528);
    EXPECT_GE(c.gradientAccumulation(), 1);
  }
  Config tiny = ferry::loadConfig(std::string(FERRY_SOURCE_DIR) +
                                  "/configs/bert-tiny.yaml");
  EXPECT_EQ(tiny.model.layers, 2);
  EXPECT_EQ(tiny.model.hidden_size, 128);
  EXPECT_EQ(tiny.model.num_heads, 2);
  EXPECT_EQ(tiny.model.seq_length, 128);
  EXPECT_EQ(tiny.model.max_predictions, 20);
  for (const char *name : {"squad-bert-base", "squad-bert-large"}) {
    Config squad = ferry::loadConfig(std::string(FERRY_SOURCE_DIR) +
                                     "/configs/" + name + ".yaml");
    EXPECT_TRUE(squad.model.squad()) << name;
    EXPECT_EQ(squad.model.seq_length, 384) << name;
    EXPECT_EQ(squad.training.optimizer.name, "adamw") << name;
  }
  Config large512 = ferry::loadConfig(std::string(FERRY_SOURCE_DIR) +
                                      "/configs/bert-large-512.yaml");
  EXPECT_EQ(large512.model.layers, 24);
  EXPECT_EQ(large512.model.hidden_size, 1024);
  EXPECT_EQ(large512.model.num_heads, 16);
  EXPECT_EQ(large512.model.seq_length, 512);
  EXPECT_EQ(large512.model.max_predictions, 76);
}

TEST(Config, VocabularyIsPaddedToAMultipleOf8) {
  Config c = parseConfig(kFull, "t", {"model.vocab_size=30522"});
  EXPECT_EQ(c.model.vocab_size, 30522);
  EXPECT_EQ(c.model.paddedVocabSize(), 30528);
  c = parseConfig(kFull, "t", {"model.vocab_size=8"});
  EXPECT_EQ(c.model.paddedVocabSize(), 8);
}

// With tensor parallelism, to a multiple of 8 x T (Megatron's padding), so
// each rank holds an equal part of the vocabulary-parallel embedding.
TEST(Config, TensorParallelPadsTheVocabularyToAMultipleOf8T) {
  Config c = parseConfig(
      kFull, "t", {"model.vocab_size=1000", "execution.tensor_parallel=2"});
  EXPECT_EQ(c.model.paddedVocabSize(), 1008);
  c = parseConfig(kFull, "t",
                  {"model.vocab_size=30522", "execution.tensor_parallel=4"});
  EXPECT_EQ(c.model.paddedVocabSize(), 30528);
  c = parseConfig(kFull, "t", {"model.vocab_size=1000"});
  EXPECT_EQ(c.model.paddedVocabSize(), 1000);
}

TEST(Config, OverridesApplyAfterTheFile) {
  Config c = parseConfig(kFull, "t",
                         {"model.layers=12", "training.optimizer.name=lamb",
                          "execution.device_memory_limit=8GiB",
                          "data.shuffle=true", "checkpoint.init='x.st'"});
  EXPECT_EQ(c.model.layers, 12);
  EXPECT_EQ(c.training.optimizer.name, "lamb");
  ASSERT_TRUE(c.execution.device_memory_limit.has_value());
  EXPECT_EQ(*c.execution.device_memory_limit, 8ull << 30);
  EXPECT_TRUE(c.data.shuffle);
  EXPECT_EQ(c.checkpoint.init, "x.st");
}

TEST(Config, MicroBatchAutoIsOneMicroBatchPerReplica) {
  Config c = parseConfig(kFull, "t", {"execution.micro_batch_size=auto"});
  EXPECT_EQ(c.execution.micro_batch_size, 16);
  EXPECT_EQ(c.gradientAccumulation(), 1);
}

TEST(Config, CanonicalTextIgnoresKeyOrderCommentsAndSpelling) {
  std::string reordered = R"(# a comment
checkpoint: {keep: 3, every_steps: 0, save_dir: "", init: ""}
data: {shuffle: no, format: auto, path: synthetic}
execution:
  replicated_tensor_sharding: false
  data_parallel: 2
  device_memory_limit: unlimited
  recompute: none
  micro_batch_size: 8
  backend: cpu
  mode: resident
training:
  lr_schedule: {total_steps: 10, power: 1, start_warmup_step: 0, warmup_steps: 2, kind: poly}
  optimizer: {clip_norm: 1, weight_decay: 0.010, epsilon: 0.000001, beta2: 0.999, beta1: 0.9, lr: 0.001, name: adamw}
  precision: fp32
  seed: 7
  steps: 10
  global_batch_size: 32
model:
  layer_norm_eps: 1e-12
  attention_dropout: 0.1
  hidden_dropout: 0.1
  max_predictions: 10
  seq_length: 64
  type_vocab_size: 2
  max_positions: 128
  vocab_size: 1000
  ffn_size: 256
  num_heads: 4
  hidden_size: 64
  layers: 2
)";
  Config a = parseConfig(kFull, "a.yaml");
  Config b = parseConfig(reordered, "b.yaml");
  EXPECT_EQ(a.canonicalText(), b.canonicalText());
  Config c = parseConfig(kFull, "a.yaml", {"model.layers=3"});
  EXPECT_NE(a.canonicalText(), c.canonicalText());
  EXPECT_NE(a.canonicalText().find("model.layers: 2\n"), std::string::npos);
  EXPECT_NE(
      a.canonicalText().find("execution.device_memory_limit: unlimited\n"),
      std::string::npos);
}

TEST(Config, DefaultsFillKeysThePresetLeavesOut) {
  Config c = parseConfig(
      R"(model: {layers: 1, hidden_size: 8, num_heads: 2, ffn_size: 32, seq_length: 16, max_predictions: 2}
training: {global_batch_size: 4, steps: 1, optimizer: {lr: 0.1}, lr_schedule: {total_steps: 1}}
)",
      "t");
  EXPECT_EQ(c.model.vocab_size, 30522);
  EXPECT_DOUBLE_EQ(c.model.hidden_dropout, 0.1);
  EXPECT_EQ(c.training.optimizer.name, "lamb");
  EXPECT_EQ(c.execution.mode, "resident");
  EXPECT_EQ(c.execution.backend, "cpu");
  EXPECT_EQ(c.execution.micro_batch_size, 4);
  EXPECT_EQ(c.data.path, "synthetic");
}

// ---- Unknown keys: did-you-mean ---------------------------------------------

TEST(ConfigErrors, UnknownKeyInOverrideSuggestsTheKey) {
  EXPECT_EQ(errorOfOverride("model.hiden_size=64"),
            "--set model.hiden_size=64: unknown key 'model.hiden_size'; did "
            "you mean 'model.hidden_size'?");
}

TEST(ConfigErrors, KeyInTheWrongSectionSuggestsWhereItLives) {
  EXPECT_EQ(errorOfOverride("training.lr=0.1"),
            "--set training.lr=0.1: unknown key 'training.lr'; did you mean "
            "'training.optimizer.lr'?");
}

TEST(ConfigErrors, UnknownKeyInFileNamesLineAndColumn) {
  std::string yaml = kFull;
  yaml.replace(yaml.find("  num_heads: 4"), 13, "  num_head: 4");
  EXPECT_EQ(errorOf(yaml), "test.yaml:4:3: unknown key 'model.num_head'; did "
                           "you mean 'model.num_heads'?");
}

TEST(ConfigErrors, UnknownSectionSuggestsTheSection) {
  EXPECT_EQ(errorOf(std::string(kFull) + "exectuion: {mode: phased}\n"),
            "test.yaml:31:1: unknown key 'exectuion'; did you mean "
            "'execution'?");
}

TEST(ConfigErrors, FarOffKeyHasNoSuggestion) {
  EXPECT_EQ(errorOfOverride("model.zzzzzzzzzzzzzzzz=1"),
            "--set model.zzzzzzzzzzzzzzzz=1: unknown key "
            "'model.zzzzzzzzzzzzzzzz'");
}

TEST(ConfigErrors, OverrideWithoutEquals) {
  EXPECT_EQ(errorOfOverride("model.layers"),
            "--set model.layers: expected KEY=VALUE, e.g. --set "
            "model.layers=4");
}

TEST(ConfigErrors, OverrideOfASection) {
  EXPECT_EQ(errorOfOverride("model=3"),
            "--set model=3: 'model' is a section; set one of its keys, e.g. "
            "--set model.layers=...");
}

// ---- Types -----------------------------------------------------------------

TEST(ConfigErrors, WrongTypeNamesKeyValueAndExpectation) {
  EXPECT_EQ(errorOfOverride("model.layers=two"),
            "--set model.layers=two: model.layers expects a positive integer, "
            "found \"two\"");
  EXPECT_EQ(errorOfOverride("model.layers=0"),
            "--set model.layers=0: model.layers expects a positive integer, "
            "found \"0\"");
  EXPECT_EQ(errorOfOverride("model.hidden_dropout=1.5"),
            "--set model.hidden_dropout=1.5: model.hidden_dropout expects a "
            "number in [0, 1), found \"1.5\"");
  EXPECT_EQ(errorOfOverride("data.shuffle=maybe"),
            "--set data.shuffle=maybe: data.shuffle expects true or false, "
            "found \"maybe\"");
  EXPECT_EQ(errorOfOverride("checkpoint.every_steps=-1"),
            "--set checkpoint.every_steps=-1: checkpoint.every_steps expects "
            "an integer >= 0, found \"-1\"");
  EXPECT_EQ(errorOfOverride("training.optimizer.lr=-1"),
            "--set training.optimizer.lr=-1: training.optimizer.lr expects a "
            "number >= 0, found \"-1\"");
  EXPECT_EQ(errorOfOverride("model.layer_norm_eps=0"),
            "--set model.layer_norm_eps=0: model.layer_norm_eps expects a "
            "number > 0, found \"0\"");
  EXPECT_EQ(errorOfOverride("execution.micro_batch_size=some"),
            "--set execution.micro_batch_size=some: execution.micro_batch_size "
            "expects 'auto' or a positive integer, found \"some\"");
}

TEST(ConfigErrors, WrongTypeInFileNamesLineAndColumn) {
  std::string yaml = kFull;
  yaml.replace(yaml.find("layers: 2"), 9, "layers: 2.5");
  EXPECT_EQ(errorOf(yaml), "test.yaml:2:3: model.layers expects a positive "
                           "integer, found \"2.5\"");
}

TEST(ConfigErrors, ChoiceSuggestsTheClosestValue) {
  EXPECT_EQ(errorOfOverride("training.precision=bf61"),
            "--set training.precision=bf61: training.precision expects one of "
            "auto, fp32, bf16, fp16, found \"bf61\"; did you mean 'bf16'?");
  EXPECT_EQ(errorOfOverride("execution.mode=phase"),
            "--set execution.mode=phase: execution.mode expects one of "
            "resident, phased, found \"phase\"; did you mean 'phased'?");
}

TEST(ConfigErrors, SizeStringThatDoesNotParse) {
  EXPECT_EQ(errorOfOverride("execution.device_memory_limit=8gigs"),
            "--set execution.device_memory_limit=8gigs: "
            "execution.device_memory_limit expects 'unlimited' or a size such "
            "as \"8GiB\", \"512MiB\" or a byte count, found \"8gigs\"");
  EXPECT_NE(errorOfOverride("execution.device_memory_limit=0GiB"), "");
}

TEST(ConfigErrors, MissingValue) {
  EXPECT_EQ(errorOfOverride("model.layers="),
            "--set model.layers=: model.layers expects a positive integer, "
            "found no value");
}

TEST(ConfigErrors, MappingWhereAValueBelongs) {
  std::string yaml = kFull;
  yaml.replace(yaml.find("layers: 2"), 9, "layers: {a: 1}");
  EXPECT_EQ(errorOf(yaml),
            "test.yaml:2:3: model.layers expects a single value, found a "
            "mapping");
}

TEST(ConfigErrors, ValueWhereASectionBelongs) {
  EXPECT_EQ(errorOf("model: 3\n"),
            "test.yaml:1:1: 'model' must be a mapping of keys (e.g. 'model:' "
            "followed by indented 'key: value' lines)");
}

TEST(ConfigErrors, RequiredKeyMissing) {
  std::string yaml = kFull;
  yaml.erase(yaml.find("  ffn_size: 256\n"), 16);
  EXPECT_EQ(errorOf(yaml),
            "test.yaml: missing required key model.ffn_size (a positive "
            "integer); add it to the file or pass --set model.ffn_size=VALUE");
}

TEST(ConfigErrors, InvalidYaml) {
  std::string message = errorOf("model: [1, 2\n");
  EXPECT_EQ(message.rfind("test.yaml:", 0), 0u) << message;
  EXPECT_NE(message.find("not valid YAML"), std::string::npos) << message;
}

TEST(ConfigErrors, NotAMapping) {
  EXPECT_EQ(errorOf("- 1\n- 2\n"),
            "test.yaml: expected a mapping with the sections model, training, "
            "execution, data, checkpoint");
}

TEST(ConfigErrors, MissingFile) {
  try {
    ferry::loadConfig("/nonexistent/bert.yaml");
    FAIL() << "no error";
  } catch (const ConfigError &e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/bert.yaml: cannot open the config file (No such "
              "file or directory); presets live in configs/, e.g. "
              "configs/bert-tiny.yaml");
  }
}

// ---- Relations
// ---------------------------------------------------------------

TEST(ConfigErrors, HiddenNotDivisibleByHeads) {
  EXPECT_EQ(errorOfOverride("model.num_heads=3"),
            "--set model.num_heads=3: model.hidden_size 64 is not divisible by "
            "model.num_heads 3; choose a number of heads that divides the "
            "hidden size");
}

TEST(ConfigErrors, GlobalBatchNotDivisibleByMicroBatchTimesReplicas) {
  EXPECT_EQ(errorOfOverride("execution.micro_batch_size=5"),
            "--set execution.micro_batch_size=5: training.global_batch_size 32 "
            "is not divisible by execution.micro_batch_size 5 x "
            "execution.data_parallel 2; choose "
            "a micro-batch size that divides global_batch_size / "
            "data_parallel");
  EXPECT_EQ(errorOf(kFull, {"execution.micro_batch_size=auto",
                            "execution.data_parallel=3"}),
            "--set execution.data_parallel=3: training.global_batch_size 32 is "
            "not divisible by execution.data_parallel 3; choose a global batch "
            "that splits "
            "evenly");
}

TEST(ConfigErrors, SequenceLongerThanPositions) {
  EXPECT_EQ(errorOfOverride("model.seq_length=256"),
            "--set model.seq_length=256: model.seq_length 256 exceeds "
            "model.max_positions 128; "
            "shorten the sequences or raise max_positions");
}

TEST(ConfigErrors, MorePredictionsThanTokens) {
  EXPECT_EQ(errorOfOverride("model.max_predictions=65"),
            "--set model.max_predictions=65: model.max_predictions 65 exceeds "
            "model.seq_length 64; "
            "at most one prediction per token");
}

TEST(ConfigErrors, ShardingWithoutReplicas) {
  EXPECT_EQ(errorOf(kFull, {"execution.data_parallel=1",
                            "execution.replicated_tensor_sharding=true"}),
            "--set execution.replicated_tensor_sharding=true: "
            "execution.replicated_tensor_sharding needs "
            "execution.data_parallel >= 2 (found 1); raise data_parallel or "
            "set it to false");
}

TEST(ConfigErrors, EmptyDataPath) {
  EXPECT_EQ(errorOfOverride("data.path="),
            "--set data.path=: data.path is empty; use 'synthetic' or a file, "
            "directory or glob of training data");
}

TEST(ConfigErrors, RelationBrokenInTheFileNamesTheFile) {
  std::string yaml = kFull;
  yaml.replace(yaml.find("num_heads: 4"), 12, "num_heads: 5");
  EXPECT_EQ(errorOf(yaml),
            "test.yaml: model.hidden_size 64 is not divisible by "
            "model.num_heads 5; choose a number of heads that divides the "
            "hidden size");
}

TEST(ConfigErrors, HugeCountsAreRejectedNotOverflowed) {
  EXPECT_EQ(errorOfOverride("model.vocab_size=9223372036854775807"),
            "--set model.vocab_size=9223372036854775807: model.vocab_size "
            "expects a positive integer, found \"9223372036854775807\"; at "
            "most 2147483647");
  // micro x data_parallel would wrap to 0 in int64 without the bound.
  EXPECT_EQ(errorOf(kFull, {"execution.micro_batch_size=1073741824",
                            "execution.data_parallel=4"}),
            "--set execution.data_parallel=4: training.global_batch_size 32 is "
            "not divisible by execution.micro_batch_size 1073741824 x "
            "execution.data_parallel 4; choose a micro-batch size that "
            "divides global_batch_size / data_parallel");
}

TEST(ConfigErrors, TensorTooLargeToRepresent) {
  // Each dimension within its sane limit, but their product past 2^40.
  EXPECT_EQ(errorOf(kFull, {"model.layers=1024", "model.hidden_size=65536",
                            "model.num_heads=1", "model.ffn_size=262144"}),
            "--set model.ffn_size=262144: the stacked FFN weights (layers x "
            "ffn x hidden) would exceed 2^40 elements; reduce the model or "
            "micro-batch size");
}

// ---- Byte sizes -------------------------------------------------------------

TEST(ByteSize, Parses) {
  using ferry::parseByteSize;
  EXPECT_EQ(parseByteSize("8GiB"), 8ull << 30);
  EXPECT_EQ(parseByteSize("8 GiB"), 8ull << 30);
  EXPECT_EQ(parseByteSize("512MiB"), 512ull << 20);
  EXPECT_EQ(parseByteSize("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parseByteSize("2GB"), 2000000000ull);
  EXPECT_EQ(parseByteSize("1kb"), 1000ull);
  EXPECT_EQ(parseByteSize("1048576"), 1048576ull);
  EXPECT_EQ(parseByteSize("100B"), 100ull);
  // Above 2^63 (where a signed rounding would go wrong) but below 2^64.
  EXPECT_EQ(parseByteSize("10000000000000000000"), 10000000000000000000ull);
}

TEST(ByteSize, Rejects) {
  using ferry::parseByteSize;
  EXPECT_FALSE(parseByteSize(""));
  EXPECT_FALSE(parseByteSize("GiB"));
  EXPECT_FALSE(parseByteSize("-1GiB"));
  EXPECT_FALSE(parseByteSize("8 gigs"));
  EXPECT_FALSE(parseByteSize("8GiB extra"));
  EXPECT_FALSE(parseByteSize("1e30TiB"));
  EXPECT_FALSE(parseByteSize("18446744073709551616")); // 2^64
  EXPECT_FALSE(parseByteSize("16EiB"));
}

TEST(ByteSize, Formats) {
  EXPECT_EQ(ferry::formatByteSize(100), "100 B");
  EXPECT_EQ(ferry::formatByteSize(1024), "1 KiB");
  EXPECT_EQ(ferry::formatByteSize(1536), "1.50 KiB");
  EXPECT_EQ(ferry::formatByteSize(8ull << 30), "8 GiB");
  EXPECT_EQ(ferry::formatByteSize(1536ull << 20), "1.50 GiB");
  EXPECT_EQ(ferry::formatByteSize((1ull << 20) + 1), "1.00 MiB");
}

// A key or a section given twice names both lines; yaml-cpp alone keeps one.
TEST(Config, DuplicateKeysAreErrors) {
  std::string yaml = kFull;
  yaml.replace(yaml.find("  layers: 2\n"), 12, "  layers: 2\n  layers: 3\n");
  EXPECT_EQ(errorOf(yaml),
            "test.yaml:3:3: key 'model.layers' is given twice in one file "
            "(first at test.yaml:2:3); keep one of them (for a one-off change "
            "use --set model.layers=VALUE)");
  std::string section = std::string(kFull) + "model:\n  layers: 4\n";
  EXPECT_NE(errorOf(section).find("section 'model' is given twice in one file "
                                  "(first at test.yaml:1:1); merge the two "
                                  "'model:' blocks into one"),
            std::string::npos)
      << errorOf(section);
  // The flow style too.
  std::string flow = kFull;
  flow.replace(flow.find("data: {path: synthetic,"), 23,
               "data: {path: synthetic, path: x,");
  EXPECT_NE(errorOf(flow).find("key 'data.path' is given twice"),
            std::string::npos)
      << errorOf(flow);
}

// Sizes far beyond any BERT are refused with the limit, before any plan.
TEST(Config, AbsurdSizesAreRefusedWithTheLimit) {
  EXPECT_EQ(errorOfOverride("model.hidden_size=1048576"),
            "--set model.hidden_size=1048576: model.hidden_size 1048576 is "
            "beyond ferry's limit of 65536 (BERT-large uses 1024); a value "
            "this large is usually a typo. Use at most 65536");
  EXPECT_NE(errorOfOverride("model.layers=5000").find("limit of 1024"),
            std::string::npos);
  EXPECT_NE(errorOfOverride("model.vocab_size=100000000").find("limit of"),
            std::string::npos);
  std::string inFile = kFull;
  inFile.replace(inFile.find("ffn_size: 256"), 13, "ffn_size: 999999");
  EXPECT_EQ(errorOf(inFile).rfind("test.yaml:5:", 0), 0u) << errorOf(inFile);
  EXPECT_EQ(errorOfOverride("model.hidden_size=65536"), "");
}

// docs/configs.md must describe every key the schema knows.
TEST(Config, EveryKeyIsDocumented) {
  std::ifstream in(std::string(FERRY_SOURCE_DIR) + "/docs/configs.md");
  ASSERT_TRUE(in) << "docs/configs.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  for (const std::string &key : ferry::configKeys())
    EXPECT_NE(text.str().find("| `" + key + "` |"), std::string::npos)
        << key << " is not documented in docs/configs.md";
}

// The stage each key declares is what docs/executable.md lists: the
// run-time keys a compiled executable accepts, and those a resumed run may
// change (whitespace aside).
TEST(Config, KeyStagesAreTheDocumentedOnes) {
  std::ifstream in(std::string(FERRY_SOURCE_DIR) + "/docs/executable.md");
  std::stringstream text;
  text << in.rdbuf();
  std::string doc, word;
  for (std::istringstream words(text.str()); words >> word;)
    doc += (doc.empty() ? "" : " ") + word;
  // In schema order.
  auto list = [](bool (*wanted)(ferry::KeyStage)) {
    std::string out;
    for (const std::string &key : ferry::configKeys())
      if (wanted(*ferry::keyStage(key)))
        out += (out.empty() ? "`" : ", `") + key + "`";
    return out;
  };
  std::string runTime =
      list([](ferry::KeyStage s) { return s != ferry::KeyStage::Compile; });
  std::string anyTime =
      list([](ferry::KeyStage s) { return s == ferry::KeyStage::RunAnyTime; });
  EXPECT_NE(doc.find("only for the run-time keys: " + runTime + ";"),
            std::string::npos)
      << "docs/executable.md should list the run-time keys: " << runTime;
  EXPECT_NE(doc.find("a resumed run may change " + anyTime + ";"),
            std::string::npos)
      << "docs/executable.md should list the keys a resume may change: "
      << anyTime;
  // Every key has a stage; model shapes are compile-time, data run-time.
  for (const std::string &key : ferry::configKeys())
    EXPECT_TRUE(ferry::keyStage(key).has_value()) << key;
  EXPECT_EQ(ferry::keyStage("model.hidden_size"), ferry::KeyStage::Compile);
  EXPECT_EQ(ferry::keyStage("data.path"), ferry::KeyStage::Run);
  EXPECT_EQ(ferry::keyStage("training.steps"), ferry::KeyStage::RunAnyTime);
  EXPECT_FALSE(ferry::keyStage("model.hiden_size").has_value());
}

// Tensor parallelism (TensorSharding.h): T must divide the heads and the
// FFN size, the message naming the nearest valid T; what it does not
// compose with yet is refused by key; execution.tensor_sharding's syntax is
// checked when the config loads.
TEST(Config, TensorParallelMustDivideTheHeadsAndTheFfn) {
  std::vector<std::string> tp = {};
  auto withT = [&](std::vector<std::string> more) {
    more.insert(more.begin(), tp.begin(), tp.end());
    return errorOf(kFull, more);
  };
  EXPECT_EQ(withT({"execution.tensor_parallel=2"}), "");
  EXPECT_EQ(withT({"execution.tensor_parallel=3"}),
            "--set execution.tensor_parallel=3: model.num_heads 4 is not "
            "divisible by execution.tensor_parallel 3 (each rank takes an "
            "equal part of the heads and of the FFN); the nearest valid "
            "tensor_parallel is 2 or 4");
  EXPECT_NE(withT({"model.ffn_size=254", "execution.tensor_parallel=4"})
                .find("model.ffn_size 254 is not divisible by "
                      "execution.tensor_parallel 4"),
            std::string::npos);
  EXPECT_NE(withT({"model.ffn_size=254", "execution.tensor_parallel=4"})
                .find("the nearest valid tensor_parallel is 2"),
            std::string::npos);
}

// Sequence parallelism splits the sequence over the tensor group: it needs
// a group (T >= 2) and a sequence T divides (the nearest valid T divides
// the heads, the FFN and the sequence), and refuses packed rows.
TEST(Config, SequenceParallelNeedsATensorGroupThatDividesTheSequence) {
  EXPECT_EQ(errorOf(kFull, {"execution.tensor_parallel=2",
                            "execution.sequence_parallel=true"}),
            "");
  EXPECT_EQ(errorOf(kFull, {"execution.sequence_parallel=true"}),
            "--set execution.sequence_parallel=true: "
            "execution.sequence_parallel splits the sequence over the "
            "tensor-parallel group, but execution.tensor_parallel is 1; set "
            "execution.tensor_parallel to 2 or more, or "
            "execution.sequence_parallel: false");
  EXPECT_EQ(
      errorOf(kFull, {"execution.tensor_parallel=4", "model.seq_length=62",
                      "execution.sequence_parallel=true"}),
      "--set model.seq_length=62: model.seq_length 62 is not divisible by "
      "execution.tensor_parallel 4 (sequence parallelism gives each "
      "rank an equal part of the sequence); the nearest valid "
      "tensor_parallel is 2, or set execution.sequence_parallel: false");
  EXPECT_NE(errorOf(kFull, {"execution.tensor_parallel=2",
                            "execution.sequence_parallel=true",
                            "model.max_sequences_per_pack=2"})
                .find("sequence parallelism with packed rows is not built"),
            std::string::npos);
}

TEST(Config, TensorParallelComposesWithTheOtherModes) {
  // Compiled and planned for CUDA (the trainer refuses to run it there).
  EXPECT_EQ(
      errorOf(kFull, {"execution.tensor_parallel=2", "execution.backend=cuda"}),
      "");
  EXPECT_EQ(errorOf(kFull,
                    {"execution.tensor_parallel=2", "training.precision=bf16"}),
            "");
  EXPECT_EQ(errorOf(kFull,
                    {"execution.tensor_parallel=2", "training.precision=fp16"}),
            "");
  EXPECT_EQ(
      errorOf(kFull,
              {"execution.tensor_parallel=2", "execution.mode=phased",
               "execution.recompute=layer", "training.optimizer.name=lamb"}),
      "");
  EXPECT_EQ(errorOf(kFull,
                    {"execution.tensor_parallel=2", "execution.data_parallel=2",
                     "execution.replicated_tensor_sharding=true"}),
            "");
}

// SQuAD's model has no MLM head: its default rules split the word
// embedding only.
TEST(Config, TensorShardingDefaultsFollowTheTask) {
  Config c = parseConfig(kFull, "test.yaml", {"model.task=squad"});
  std::vector<std::string> rules;
  for (const ferry::ShardingRule &r : ferry::tensorShardingRules(c))
    rules.push_back(ferry::formatShardingRule(r));
  EXPECT_EQ(rules.back(), "embeddings.word=split(0)");
  EXPECT_EQ(std::count(rules.begin(), rules.end(), "mlm.decoder.bias=split(0)"),
            0);
}

TEST(Config, TensorShardingSyntaxIsCheckedOnLoad) {
  EXPECT_EQ(errorOfOverride("execution.tensor_sharding=layer.ffn.*=replicated, "
                            "layer.attention.query.weight=split(1)"),
            "");
  EXPECT_EQ(
      errorOfOverride("execution.tensor_sharding=layer.ffn.*:replicated"),
      "--set execution.tensor_sharding=layer.ffn.*:replicated: "
      "execution.tensor_sharding entry 'layer.ffn.*:replicated' has no '='; "
      "write PATTERN=split(D) or PATTERN=replicated, entries separated by "
      "commas (e.g. \"layer.ffn.*=replicated, "
      "layer.attention.query.weight=split(0)\")");
  EXPECT_NE(errorOfOverride("execution.tensor_sharding=w=split(-1)")
                .find("splits dimension '-1', which is not a dimension"),
            std::string::npos);
  EXPECT_NE(errorOfOverride("execution.tensor_sharding=w=sharded")
                .find("has the sharding 'sharded'"),
            std::string::npos);
}

TEST(Config, TensorShardingRulesAreMegatronsThenTheOverrides) {
  Config c = parseConfig(kFull, "test.yaml",
                         {"execution.tensor_sharding=layer.ffn.*=replicated"});
  std::vector<std::string> rules;
  for (const ferry::ShardingRule &r : ferry::tensorShardingRules(c))
    rules.push_back(ferry::formatShardingRule(r));
  EXPECT_EQ(
      rules,
      (std::vector<std::string>{
          "layer.attention.query.*=split(0)", "layer.attention.key.*=split(0)",
          "layer.attention.value.*=split(0)",
          "layer.ffn.intermediate.*=split(0)",
          "layer.attention.output.weight=split(1)",
          "layer.ffn.output.weight=split(1)", "embeddings.word=split(0)",
          "mlm.decoder.bias=split(0)", "layer.ffn.*=replicated"}));
  EXPECT_TRUE(
      ferry::globMatches("layer.ffn.*.weight", "layer.ffn.output.weight"));
  EXPECT_TRUE(ferry::globMatches("layer.?fn.*", "layer.ffn.output.bias"));
  EXPECT_FALSE(
      ferry::globMatches("layer.ffn.*.weight", "layer.ffn.output.bias"));
  EXPECT_FALSE(ferry::globMatches("ffn", "layer.ffn"));
  EXPECT_TRUE(ferry::globMatches("*", ""));
}
