// SQuAD v1.1's official evaluation (evaluate-v1.1.py), in C++: answers are
// normalised (lower-cased, ASCII punctuation removed, the articles "a",
// "an" and "the" removed, whitespace collapsed), exact match is equality
// of the normalised strings, F1 is over their whitespace tokens (as
// multisets), and each question scores its best over the gold answers; an
// unanswered question scores 0. Both scores are percentages.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ferry::squad {

std::string normalizeAnswer(const std::string &text);
double exactMatch(const std::string &prediction, const std::string &truth);
double f1Score(const std::string &prediction, const std::string &truth);

struct GoldQuestion {
  std::string id;
  std::vector<std::string> answers;
};

// The questions of a SQuAD JSON file (data[].paragraphs[].qas[]), in file
// order. Throws data::DataError naming the file and the JSON path.
std::vector<GoldQuestion> readGoldQuestions(const std::string &path);
// A predictions file: {"question id": "answer text", ...}.
std::map<std::string, std::string> readPredictions(const std::string &path);

struct Scores {
  double exactMatch = 0, f1 = 0; // percent
  int64_t questions = 0, unanswered = 0;
};

// `unanswered` hears each question id without a prediction.
Scores
evaluate(const std::vector<GoldQuestion> &questions,
         const std::map<std::string, std::string> &predictions,
         const std::function<void(const std::string &)> &unanswered = {});

} // namespace ferry::squad
