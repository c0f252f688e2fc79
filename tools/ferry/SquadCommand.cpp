// `ferry squad eval --data dev-v1.1.json --predictions predictions.json`:
// SQuAD v1.1's exact match and F1 with the official script's semantics
// (runtime/squad/SquadEval.h), printed as the script prints them.
#include "tools/ferry/Commands.h"

#include "runtime/squad/SquadEval.h"

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

Runner addSquadCommand(CLI::App &app) {
  CLI::App *squad = app.add_subcommand(
      "squad", "SQuAD v1.1 question answering: evaluate predictions");
  squad->require_subcommand(1);
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
  return [o, eval]() -> int {
    if (eval->parsed())
      return runSquadEval(*o);
    return 2;
  };
}

} // namespace ferry::cli
