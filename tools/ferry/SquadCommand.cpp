// `ferry squad train|predict|eval`: fine-tuning a span head on SQuAD v1.1
// and answering its questions (SquadRun.cpp, in the run module), and `eval`,
// SQuAD v1.1's exact match and F1 with the official script's semantics
// (training/squad/SquadEval.h), printed as the script prints them.
#include "tools/ferry/Commands.h"
#include "tools/ferry/RunApi.h"

#include "training/squad/SquadEval.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>

namespace ferry::cli {
namespace {

struct SquadEvalOptions {
  std::string data, predictions;
};

int runSquadEval(const SquadEvalOptions &o) {
  try {
    std::vector<squad::GoldQuestion> questions =
        squad::readGoldQuestions(o.data);
    std::map<std::string, std::string> predictions =
        squad::readPredictions(o.predictions);
    std::vector<std::string> missing;
    squad::Scores s =
        squad::evaluate(questions, predictions,
                        [&](const std::string &id) { missing.push_back(id); });
    if (!missing.empty()) {
      std::string first;
      for (size_t i = 0; i < missing.size() && i < 5; ++i)
        first += (i ? ", " : "") + missing[i];
      std::fprintf(stderr,
                   "ferry squad eval: %zu of %lld questions have no "
                   "prediction in %s and score 0 (%s%s)\n",
                   missing.size(), static_cast<long long>(s.questions),
                   o.predictions.c_str(), first.c_str(),
                   missing.size() > 5 ? ", ..." : "");
    }
    nlohmann::json out = {{"exact_match", s.exactMatch}, {"f1", s.f1}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ferry squad eval: error: %s\n", e.what());
    return 1;
  }
}

} // namespace

// The flags train and predict share.
void addSquadFlags(CLI::App *cmd, SquadOptionsCli &o) {
  addCompileFlags(cmd, o.compile);
  addCompileOnlyFlag(cmd, o.compile);
  cmd->add_option("config", o.input,
                  "Model config, e.g. configs/squad-bert-base.yaml "
                  "(model.task is set to squad)")
      ->required();
  cmd->add_option("--set", o.overrides,
                  "Override a config key, e.g. --set "
                  "training.optimizer.lr=3e-5 (repeatable)");
  cmd->add_option("--vocab", o.vocab,
                  "The vocabulary the model was pretrained with (vocab.txt)")
      ->required();
  cmd->add_flag("--cased", o.cased,
                "A cased vocabulary (keep case and accents)");
  cmd->add_option("--doc-stride", o.docStride,
                  "Tokens between the starts of a context's windows")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-query-length", o.maxQueryLength,
                  "Question tokens kept")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

Runner addSquadCommand(CLI::App &app) {
  CLI::App *squad = app.add_subcommand(
      "squad", "SQuAD v1.1 question answering: fine-tune a span head, "
               "predict answers, evaluate predictions");
  squad->require_subcommand(1);

  auto t = std::make_shared<SquadOptionsCli>();
  CLI::App *train = squad->add_subcommand(
      "train", "Fine-tune BERT with a span head (start and end logits) on a "
               "SQuAD v1.1 training file: windows of model.seq_length tokens, "
               "the config's optimizer (AdamW for the presets), linear warm-up "
               "and decay over the run");
  addSquadFlags(train, *t);
  train->add_option("--data", t->data, "The SQuAD v1.1 training file "
                                       "(train-v1.1.json)")
      ->required();
  train->add_option("--init-checkpoint", t->initCheckpoint,
                    "Start from this checkpoint (a ferry checkpoint "
                    "directory, or a Hugging Face BertForPreTraining or "
                    "BertForQuestionAnswering safetensors file); the span "
                    "head starts from its initialisation when the file has "
                    "none");
  train->add_option("--epochs", t->epochs, "Passes over the training windows")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  train->add_option("--warmup-proportion", t->warmupProportion,
                    "Share of the steps the learning rate warms up over")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  train->add_option("--resume", t->resume,
                    "Continue an interrupted run from its --save directory "
                    "(its latest step) or one step directory: weights, "
                    "optimizer state and step; the same flags give the same "
                    "updates as the uninterrupted run");
  train->add_option("--save", t->save,
                    "Save the fine-tuned model here at the end, every "
                    "checkpoint.every_steps updates and on SIGINT/SIGTERM "
                    "(step-NNNNNNNN/model.safetensors, Hugging Face "
                    "BertForQuestionAnswering names)");
  train->add_option("--log-every", t->logEvery, "Print every N steps (0: no)")
      ->capture_default_str();
  train->add_option("--metrics", t->metrics,
                    "Write each update's metrics as JSON lines here (the "
                    "fields of docs/metrics.md, span_accuracy for the "
                    "MLM and NSP ones)");

  auto p = std::make_shared<SquadOptionsCli>();
  CLI::App *predict = squad->add_subcommand(
      "predict", "Answer the questions of a SQuAD v1.1 file: the span head's "
                 "logits over every window, the n best spans mapped back to "
                 "the context's text; writes predictions.json and "
                 "nbest_predictions.json");
  addSquadFlags(predict, *p);
  predict->add_option("--data", p->data,
                      "The SQuAD v1.1 file to answer (dev-v1.1.json)")
      ->required();
  predict->add_option("--checkpoint", p->checkpoint,
                      "The fine-tuned model: a ferry squad train checkpoint "
                      "directory, or a BertForQuestionAnswering safetensors "
                      "file")
      ->required();
  predict->add_option("-o,--output", p->output,
                      "Directory for predictions.json and "
                      "nbest_predictions.json")
      ->capture_default_str();
  predict->add_option("--n-best", p->nBest, "Candidates kept per question")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  predict->add_option("--max-answer-length", p->maxAnswerLength,
                      "Longest answer, in tokens")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  predict->add_flag("--eval", p->evaluate,
                    "Also print the official exact match and F1 against "
                    "--data's answers");

  auto o = std::make_shared<SquadEvalOptions>();
  CLI::App *eval = squad->add_subcommand(
      "eval", "Exact match and F1 of a predictions file against a SQuAD "
              "v1.1 dataset, as the official evaluate-v1.1.py computes them");
  eval->add_option("--data", o->data,
                   "The SQuAD v1.1 JSON file (dev-v1.1.json)")
      ->required();
  eval->add_option("--predictions", o->predictions,
                   "The predictions: {\"question id\": \"answer text\", ...}")
      ->required();
  return [o, eval, t, train, p, predict]() -> int {
    if (eval->parsed())
      return runSquadEval(*o);
    if (train->parsed())
      return runInModule(&RunApi::squadTrain, *t);
    if (predict->parsed())
      return runInModule(&RunApi::squadPredict, *p);
    return 2;
  };
}

} // namespace ferry::cli
