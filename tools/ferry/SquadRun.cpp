// The bodies of `ferry squad train` and `ferry squad predict`
// (SquadCommand.cpp parses their flags): SQuAD v1.1 features made from the
// JSON file with the model's tokenizer, fed to the span head's program
// (model.task squad), fine-tuning with the config's optimizer and a linear
// warm-up and decay over the run's steps, or the logits of every window
// read back and turned into answers as run_squad.py does. Built into
// libferry-run.so (RunApi.h).
#include "tools/ferry/ReplicaRun.h"
#include "tools/ferry/RunApi.h"

#include "runtime/ByteSize.h"
#include "runtime/Error.h"
#include "runtime/backend/ProgramIo.h"
#include "runtime/backend/Registry.h"
#include "training/checkpoint/Checkpoint.h"
#include "training/checkpoint/HfConfig.h"
#include "runtime/random/Philox.h"
#include "training/squad/SquadData.h"
#include "training/squad/SquadEval.h"
#include "training/squad/SquadPredict.h"
#include "training/text/Tokenizer.h"
#include "training/text/Vocab.h"
#include "training/train/LossScale.h"
#include "training/train/Trainer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

namespace ferry::cli {
namespace {

// The program inputs of `rows` rows: features order[first ...] (rows past
// the end pad the batch with weight 0).
struct SpanBatch {
  std::vector<int32_t> ids, segments, mask, positions;
  std::vector<float> weights;
  double slots = 0; // the weighted slots: 2 a real feature
};

void fillBatch(const std::vector<squad::Feature> &features,
               const std::vector<uint32_t> &order, int64_t first, int64_t rows,
               int64_t seq, SpanBatch &b) {
  b.ids.assign(static_cast<size_t>(rows * seq), 0);
  b.segments.assign(b.ids.size(), 0);
  b.mask.assign(b.ids.size(), 0);
  b.positions.assign(static_cast<size_t>(2 * rows), 0);
  b.weights.assign(b.positions.size(), 0.0f);
  b.slots = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = first + r;
    if (at >= static_cast<int64_t>(order.size()))
      break;
    const squad::Feature &f = features[static_cast<size_t>(order[at])];
    for (size_t t = 0; t < f.ids.size(); ++t) {
      size_t to = static_cast<size_t>(r * seq) + t;
      b.ids[to] = f.ids[t];
      b.segments[to] = f.segmentIds[t];
      b.mask[to] = 1;
    }
    b.positions[2 * r] = static_cast<int32_t>(f.start);
    b.positions[2 * r + 1] = static_cast<int32_t>(f.end);
    b.weights[2 * r] = b.weights[2 * r + 1] = 1.0f;
    b.slots += 2;
  }
}

void feed(Backend &backend, const SpanBatch &b, float spanCount) {
  writeInput(backend, "input.input_ids", b.ids);
  writeInput(backend, "input.segment_ids", b.segments);
  writeInput(backend, "input.input_mask", b.mask);
  writeInput(backend, "input.span_positions", b.positions);
  writeInput(backend, "input.span_weights", b.weights);
  writeInput(backend, "input.span_count", std::vector<float>{spanCount});
}

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
// runs in one process (execution.data_parallel is set to 1 for it).
Config squadConfig(const SquadOptionsCli &o,
                   std::vector<std::string> &overrides, bool replicas) {
  if (o.input.size() >= 4 && o.input.substr(o.input.size() - 4) == ".fxe")
    throw RuntimeError("ferry squad compiles its config (the schedule's "
                       "steps come from the data): give configs/*.yaml, not " +
                       o.input);
  overrides.insert(overrides.begin(), "model.task=squad");
  if (!replicas)
    overrides.push_back("execution.data_parallel=1");
  return loadConfig(o.input, overrides);
}

} // namespace

int runSquadTrain(const SquadOptionsCli &o) {
  // Declared outside the try, as in `ferry train`: a failing rank ends the
  // job before the backend, whose collectives may still be in flight, goes.
  ReplicaRun replicas;
  std::optional<LoadedExecutable> loaded;
  std::unique_ptr<Backend> backend;
  try {
    replicas.join();
    comm::Communicator &group = *replicas.group;
    std::FILE *out = replicas.out;
    std::vector<std::string> overrides = o.overrides;
    Config config = squadConfig(o, overrides, /*replicas=*/true);
    SquadData d = readData(o, config, /*training=*/true);
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
    loaded =
        loadExecutable(o.input, overrides, o.compile, [&](const Config &c) {
          checkReplicaCount(c, group);
          group.setTimeoutSeconds(c.execution.collective_timeout_seconds);
        });
    if (!loaded) { // the error is printed
      replicas.failPrinted("the executable could not be built");
      return 1;
    }
    if (stopAfterCompile(o.compile, o.input, *loaded, replicas.out))
      return 0;
    config = loaded->config;
    replicas.checkSameRun(*loaded->exe, config, steps);
    const fxe::Executable &exe = loaded->exe->root();
    backend = createBackend(exe, config.execution.device_memory_limit, &group);
    // Each replica takes its rows of every global batch.
    const int64_t rows = global / group.size();
    bool replicaInput = false; // train_step takes the replica's index
    for (const fxe::Program *prog : *exe.programs())
      if (prog->name()->str() == "train_step")
        replicaInput = prog->inputs() && prog->inputs()->size() > 1;
    backend->setGraphReplay(config.execution.cuda_graphs);
    backend->initialiseStates(static_cast<uint64_t>(config.training.seed));
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
        group.size() > 1
            ? fmt::format(" over {} replicas", group.size()).c_str()
            : "",
        static_cast<long long>(config.training.lr_schedule.warmup_steps));
    if (!o.initCheckpoint.empty()) {
      std::string file = ckpt::modelFileOf(o.initCheckpoint);
      ckpt::ImportReport r =
          ckpt::importStates(exe, *backend, fxe::Role_Parameter,
                             ckpt::readSafetensors(file), "qa_outputs.");
      std::fprintf(out, "initialised %lld parameter tensors from %s\n",
                   static_cast<long long>(r.tensors), file.c_str());
      for (const std::string &note : r.notes)
        std::fprintf(out, "  note: %s\n", note.c_str());
      if (!r.unused.empty())
        std::fprintf(out,
                     "  note: %zu tensor(s) of the file are not used by the "
                     "span model (first: %s)\n",
                     r.unused.size(), r.unused.front().c_str());
    }
    std::fflush(out);

    SpanBatch batch;
    std::vector<uint32_t> order;
    double windowSeconds = 0, windowLoss = 0, windowRows = 0;
    int64_t windowSteps = 0;
    // fp16: the dynamic loss scale; a skipped update does not count in the
    // schedule (the program's step is the updates applied).
    DynamicLossScale lossScale(config);
    int64_t skipped = 0;
    for (int64_t s = 0; s < steps; ++s) {
      auto start = std::chrono::steady_clock::now();
      int64_t epoch = s / perEpoch;
      if (s % perEpoch == 0)
        // A Fisher-Yates shuffle keyed by (seed, epoch), as the pretraining
        // data loader shuffles.
        order = random::shuffled(static_cast<uint32_t>(features),
                                 static_cast<uint64_t>(config.training.seed),
                                 random::purposeHash("squad.shuffle"),
                                 static_cast<uint64_t>(epoch));
      fillBatch(d.features, order,
                (s % perEpoch) * global + group.rank() * rows, rows,
                config.model.seq_length, batch);
      double slots = batch.slots; // the global batch's
      group.allReduceSum(&slots, &slots, 1, "the sum of span slots");
      feed(*backend, batch, static_cast<float>(slots));
      if (lossScale.enabled())
        writeInput(*backend, "input.loss_scale",
                   std::vector<float>{static_cast<float>(lossScale.scale())});
      std::vector<int64_t> inputs = {s - skipped};
      if (replicaInput)
        inputs.push_back(group.rank());
      backend->run("train_step", inputs);
      float loss = readMetric(*backend, "metric.loss");
      DynamicLossScale::Outcome scaling =
          lossScale.update(s + 1, readMetric(*backend, "metric.grad_norm"));
      skipped += scaling.skipped ? 1 : 0;
      if (!scaling.note.empty() && o.logEvery > 0)
        std::fprintf(out, "%s\n", scaling.note.c_str());
      if (!std::isfinite(loss))
        throw RuntimeError(fmt::format(
            "the loss became {} at step {}; lower training.optimizer.lr", loss,
            s + 1));
      windowSeconds += std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      windowLoss += loss;
      windowRows += slots / 2;
      ++windowSteps;
      if (o.logEvery > 0 &&
          ((s + 1) % o.logEvery == 0 || s + 1 == steps || s == 0)) {
        std::fprintf(
            out,
            "step %5lld/%lld  epoch %lld  loss %.4f  span_acc %.4f  "
            "lr %.3e  %.1f questions/s\n",
            static_cast<long long>(s + 1), static_cast<long long>(steps),
            static_cast<long long>(epoch + 1),
            windowLoss / static_cast<double>(windowSteps),
            slots > 0 ? readMetric(*backend, "metric.span_correct") / slots
                      : 0.0,
            readMetric(*backend, "metric.lr"), windowRows / windowSeconds);
        std::fflush(out);
        windowSeconds = windowLoss = windowRows = 0;
        windowSteps = 0;
      }
      if (!o.metrics.empty() && group.rank() == 0) {
        std::FILE *m = std::fopen(o.metrics.c_str(), s == 0 ? "w" : "a");
        if (!m)
          throw RuntimeError("cannot write metrics to " + o.metrics);
        std::fprintf(m, "{\"step\": %lld, \"loss\": %.9g}\n",
                     static_cast<long long>(s + 1), loss);
        std::fclose(m);
      }
    }
    if (!o.save.empty()) {
      ckpt::TrainerState state;
      state.step = steps;
      state.dataPosition = steps * global;
      state.seed = config.training.seed;
      state.configText = config.canonicalText();
      state.lossScale = lossScale.scale();
      state.lossScaleCleanSteps = lossScale.cleanSteps();
      state.skippedUpdates = skipped;
      state.huggingFaceConfig = ckpt::huggingFaceConfigJson(config);
      // Every replica gathers its shards; rank 0 writes, the others wait.
      std::string written = ckpt::saveCheckpoint(o.save, exe, *backend, state,
                                                 config.checkpoint.keep);
      if (group.size() > 1) {
        double timeout = group.timeoutSeconds();
        group.setTimeoutSeconds(std::max(timeout, 7 * 24 * 3600.0));
        char done = 1;
        group.broadcast(&done, 1, 0, "the wait for rank 0's checkpoint write");
        group.setTimeoutSeconds(timeout);
      }
      std::fprintf(out,
                   "saved checkpoint %s (model.safetensors in Hugging Face "
                   "BertForQuestionAnswering names)\n",
                   written.c_str());
    }
    return 0;
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
    SpanBatch batch;
    auto start = std::chrono::steady_clock::now();
    for (int64_t first = 0; first < count; first += rows) {
      fillBatch(d.features, order, first, rows, seq, batch);
      feed(*backend, batch, 1.0f);
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
