// SQuAD answers from the span head's logits, as run_squad.py's
// write_predictions chooses them: for every window of a question, the
// `nBest` best start and end tokens; pairs that lie in the context, in
// order, at most `maxAnswerLength` tokens long, and start where the window
// has the most context; ranked by start + end logit over all windows; each
// mapped back to the original context's text (the WordPiece text aligned
// to the basic tokenizer's, spaces aside, so case and accents come back);
// the first `nBest` distinct texts with their softmax probabilities.
#pragma once

#include "training/squad/SquadData.h"

#include <map>
#include <string>
#include <vector>

namespace ferry::squad {

struct Candidate {
  std::string text;
  double startLogit = 0, endLogit = 0, probability = 0;
};

struct PredictOptions {
  int64_t nBest = 20, maxAnswerLength = 30;
  bool lowerCase = true; // the tokenizer's: an uncased vocabulary
};

// startLogits[f] and endLogits[f] hold a logit per position of feature f's
// row: its tokens, and may go on over the row's padding (the reference
// ranks the whole padded row; a padding position is never an answer).
// Returns each question id's candidates, best first (never empty: the
// reference's "empty" when no span qualifies). Throws data::DataError for
// an n-best size or answer length under 1.
std::map<std::string, std::vector<Candidate>>
predictAnswers(const std::vector<Example> &examples,
               const std::vector<Feature> &features,
               const std::vector<std::vector<float>> &startLogits,
               const std::vector<std::vector<float>> &endLogits,
               const text::Vocab &vocab, const PredictOptions &options);

// Writes predictions.json ({"id": "best answer"}) and, when `nbestPath` is
// not empty, nbest_predictions.json ({"id": [{"text", "probability",
// "start_logit", "end_logit"}, ...]}), the reference's two files, each
// atomically (a temporary renamed over the target). Throws
// data::DataError naming the file when it cannot be written.
void writePredictions(
    const std::map<std::string, std::vector<Candidate>> &answers,
    const std::string &predictionsPath, const std::string &nbestPath = "");

// run_squad.py's get_final_text: the part of `original` (a span of context
// words) that `predicted` (the WordPiece text, "##" joined) covers.
std::string finalText(const std::string &predicted, const std::string &original,
                      bool lowerCase);

} // namespace ferry::squad
