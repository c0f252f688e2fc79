// The bodies of `ferry squad train` and `ferry squad predict`
// (SquadCommand.cpp parses their flags): SQuAD v1.1 features made from the
// JSON file with the model's tokenizer, fed to the span head's program
// (model.task squad). Training is the Trainer's loop over SQuAD's batches
// (training/squad/SquadBatches.h) with the config's optimizer and a linear
// warm-up and decay over the run's steps; prediction reads the logits of
// every window back and turns them into answers as run_squad.py does.
// Built into libferry-run.so (RunApi.h).
#include "tools/ferry/ReplicaRun.h"
#include "tools/ferry/RunApi.h"

#include "runtime/Error.h"
#include "runtime/backend/Registry.h"
#include "training/checkpoint/Checkpoint.h"
#include "training/squad/SquadBatches.h"
#include "training/squad/SquadData.h"
#include "training/squad/SquadEval.h"
#include "training/squad/SquadPredict.h"
#include "training/text/Tokenizer.h"
#include "training/text/Vocab.h"
#include "training/train/StopSignals.h"
#include "training/train/Trainer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace ferry::cli {
namespace {

// The features of a SQuAD file for the config's model.
struct SquadData {
  text::Vocab vocab;
  std::vector<squad::Example> examples;
  std::vector<squad::Feature> features;
  int64_t skipped = 0;
};

SquadData readData(const SquadOptionsCli &o, const Config &config,
                   bool training) {
  if (o.vocab.empty())
    throw RuntimeError("--vocab FILE is required: the vocabulary (vocab.txt) "
                       "the model was pretrained with");
  SquadData d{text::Vocab::load(o.vocab), {}, {}, 0};
  text::Tokenizer tokenizer(d.vocab, !o.cased);
  d.examples = squad::readExamples(o.data, training, &d.skipped);
  squad::FeatureOptions options;
  options.seq = config.model.seq_length;
  options.docStride = o.docStride;
  options.maxQueryLength = o.maxQueryLength;
  d.features = squad::makeFeatures(d.examples, tokenizer, options, training);
  if (d.features.empty())
    throw RuntimeError(o.data + ": holds no questions to " +
                       (training ? "train on" : "answer"));
  if (static_cast<int64_t>(d.vocab.size()) > config.model.vocab_size)
    throw RuntimeError(fmt::format(
        "{}: {} tokens, but model.vocab_size is {}; set model.vocab_size to "
        "the vocabulary's size",
        o.vocab, d.vocab.size(), config.model.vocab_size));
  return d;
}

// The config the executable is compiled from: model.task squad. Prediction
// runs in one process (execution.data_parallel and tensor_parallel are set
// to 1 for it, and sequence_parallel off: checkpoints hold whole tensors).
Config squadConfig(const SquadOptionsCli &o,
                   std::vector<std::string> &overrides, bool replicas) {
  if (o.input.size() >= 4 && o.input.substr(o.input.size() - 4) == ".fxe")
    throw RuntimeError("ferry squad compiles its config (the schedule's "
                       "steps come from the data): give configs/*.yaml, not " +
                       o.input);
  overrides.insert(overrides.begin(), "model.task=squad");
  if (!replicas) {
    overrides.push_back("execution.data_parallel=1");
    overrides.push_back("execution.tensor_parallel=1");
    overrides.push_back("execution.sequence_parallel=false");
  }
  return loadConfig(o.input, overrides);
}

// " over 2 replicas", " over 1 replica x 2 tensor-parallel ranks" or "".
std::string processesText(const Config &config) {
  const int64_t replicas = config.execution.data_parallel,
                tensor = config.execution.tensor_parallel;
  if (replicas == 1 && tensor == 1)
    return "";
  std::string text =
      fmt::format(" over {} replica{}", replicas, replicas == 1 ? "" : "s");
  if (tensor > 1)
    text += fmt::format(" x {} tensor-parallel ranks", tensor);
  return text;
}

} // namespace

int runSquadTrain(const SquadOptionsCli &o) {
  // Declared outside the try, as in `ferry train`: a failing rank ends the
  // job before the trainer's backend, whose collectives may still be in
  // flight, goes (and the features before the trainer that reads them).
  ReplicaRun replicas;
  std::optional<LoadedExecutable> loaded;
  std::optional<SquadData> data;
  std::unique_ptr<Trainer> trainer;
  try {
    replicas.join();
    comm::Communicator &group = *replicas.group;
    std::FILE *out = replicas.out;
    std::vector<std::string> overrides = o.overrides;
    Config config = squadConfig(o, overrides, /*replicas=*/true);
    data = readData(o, config, /*training=*/true);
    const SquadData &d = *data;
    const int64_t global = config.training.global_batch_size;
    const int64_t features = static_cast<int64_t>(d.features.size());
    const int64_t perEpoch = (features + global - 1) / global;
    const int64_t steps = perEpoch * o.epochs;
    // The schedule over this run: warm-up over the first proportion, then
    // the config's decay to the end (run_squad.py's linear one with poly
    // power 1).
    overrides.push_back(
        fmt::format("training.lr_schedule.total_steps={}", steps));
    overrides.push_back(fmt::format("training.steps={}", steps));
    overrides.push_back(
        fmt::format("training.lr_schedule.warmup_steps={}",
                    static_cast<int64_t>(std::llround(
                        o.warmupProportion * static_cast<double>(steps)))));
    loaded = loadExecutable(
        o.input, overrides, o.compile,
        [&](const Config &c) {
          checkReplicaCount(c, group);
          group.setTimeoutSeconds(c.execution.collective_timeout_seconds);
        },
        &group);
    if (!loaded) { // the error is printed
      replicas.failPrinted("the executable could not be built");
      return 1;
    }
    if (stopAfterCompile(o.compile, o.input, *loaded, replicas.out))
      return 0;
    config = loaded->config;
    if (!o.resume.empty() && !o.initCheckpoint.empty())
      throw RuntimeError("--resume and --init-checkpoint both say where the "
                         "weights come from; give one");
    replicas.checkSameRun(*loaded->exe, config, steps);
    // The one training loop, fed SQuAD's windows.
    trainer = std::make_unique<Trainer>(
        *loaded->exe, config, &group,
        std::make_unique<squad::SquadBatches>(d.features, config));
    std::fprintf(
        out,
        "ferry squad train %s: %lld questions (%lld skipped), %lld "
        "windows of %lld tokens (doc stride %lld), %lld epochs of "
        "%lld steps (global batch %lld%s), warm-up %lld steps\n",
        o.data.c_str(), static_cast<long long>(d.examples.size()),
        static_cast<long long>(d.skipped), static_cast<long long>(features),
        static_cast<long long>(config.model.seq_length),
        static_cast<long long>(o.docStride), static_cast<long long>(o.epochs),
        static_cast<long long>(perEpoch), static_cast<long long>(global),
        processesText(config).c_str(),
        static_cast<long long>(config.training.lr_schedule.warmup_steps));
    if (!o.initCheckpoint.empty())
      trainer->initFromCheckpoint(o.initCheckpoint, out);
    if (!o.resume.empty())
      trainer->resume(o.resume, out);
    std::fflush(out);
    installStopHandlers();
    TrainOptions run;
    run.steps = steps;
    run.logEvery = o.logEvery;
    run.metricsPath = o.metrics;
    run.saveDir = o.save;
    run.quiet = o.logEvery == 0;
    run.checkpointNote = " (model.safetensors in Hugging Face "
                         "BertForQuestionAnswering names)";
    RunResult result = trainer->run(run, out);
    std::fflush(out);
    // Interrupted runs exit as the shell expects of a signal (128 + number).
    return result.stopSignal != 0 ? 128 + result.stopSignal : 0;
  } catch (const std::exception &e) {
    if (replicas.group && replicas.group->size() > 1)
      replicas.fail(e);
    else
      std::fprintf(stderr, "ferry squad train: error: %s\n", e.what());
  }
  return 1;
}

int runSquadPredict(const SquadOptionsCli &o) {
  try {
    if (o.checkpoint.empty())
      throw RuntimeError("--checkpoint DIR_OR_FILE is required: the "
                         "fine-tuned model (ferry squad train --save, or a "
                         "BertForQuestionAnswering safetensors file)");
    std::vector<std::string> overrides = o.overrides;
    Config config = squadConfig(o, overrides, /*replicas=*/false);
    // One micro-batch a program run: its logits are the span head's output.
    overrides.push_back(fmt::format("training.global_batch_size={}",
                                    config.execution.micro_batch_size));
    SquadData d = readData(o, config, /*training=*/false);
    std::optional<LoadedExecutable> loaded =
        loadExecutable(o.input, overrides, o.compile);
    if (!loaded)
      return 1;
    if (stopAfterCompile(o.compile, o.input, *loaded, stdout))
      return 0;
    config = loaded->config;
    const fxe::Executable &exe = loaded->exe->root();
    std::unique_ptr<Backend> backend =
        createBackend(exe, config.execution.device_memory_limit);
    backend->initialiseStates(static_cast<uint64_t>(config.training.seed));
    std::string file = ckpt::modelFileOf(o.checkpoint);
    ckpt::importStates(exe, *backend, fxe::Role_Parameter,
                       ckpt::readSafetensors(file));
    const fxe::State *logits = backend->state("output.eval.span_logits");
    if (!logits)
      throw RuntimeError("the executable has no output.eval.span_logits: it "
                         "was not compiled for model.task squad");
    const int64_t rows = config.execution.micro_batch_size,
                  seq = config.model.seq_length;
    const int64_t count = static_cast<int64_t>(d.features.size());
    std::vector<uint32_t> order(static_cast<size_t>(count));
    std::iota(order.begin(), order.end(), 0u);
    std::vector<std::vector<float>> starts(order.size()), ends(order.size());
    std::vector<float> values(static_cast<size_t>(rows * 2 * seq));
    squad::SpanBatch batch;
    auto start = std::chrono::steady_clock::now();
    for (int64_t first = 0; first < count; first += rows) {
      squad::fillSpanBatch(d.features, order, first, rows, seq, batch);
      squad::writeSpanInputs(*backend, batch, 1.0f);
      backend->run("eval_step", {});
      backend->read(logits, 0, values.data(),
                    static_cast<int64_t>(values.size() * sizeof(float)));
      for (int64_t r = 0; r < rows && first + r < count; ++r) {
        const float *row = values.data() + r * 2 * seq;
        starts[static_cast<size_t>(first + r)].assign(row, row + seq);
        ends[static_cast<size_t>(first + r)].assign(row + seq, row + 2 * seq);
      }
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    squad::PredictOptions options;
    options.nBest = o.nBest;
    options.maxAnswerLength = o.maxAnswerLength;
    options.lowerCase = !o.cased;
    auto answers = squad::predictAnswers(d.examples, d.features, starts, ends,
                                         d.vocab, options);
    std::filesystem::create_directories(o.output);
    std::string predictions = o.output + "/predictions.json";
    squad::writePredictions(answers, predictions,
                            o.output + "/nbest_predictions.json");
    std::printf("ferry squad predict %s: %zu questions, %lld windows in %.1f "
                "s (%.1f windows/s); wrote %s and nbest_predictions.json\n",
                o.data.c_str(), d.examples.size(),
                static_cast<long long>(count), seconds,
                static_cast<double>(count) / seconds, predictions.c_str());
    if (o.evaluate) {
      squad::Scores scores =
          squad::evaluate(squad::readGoldQuestions(o.data),
                          squad::readPredictions(predictions), {});
      // As `ferry squad eval` prints them.
      nlohmann::json printed = {{"exact_match", scores.exactMatch},
                                {"f1", scores.f1}};
      std::printf("%s\n", printed.dump().c_str());
    }
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ferry squad predict: error: %s\n", e.what());
    return 1;
  }
}

} // namespace ferry::cli
