// SQuAD answers from logits (training/squad/SquadPredict): the original
// text recovered from WordPiece text (case, accents and a possessive's
// split apostrophe), and the choice among windows: a span is skipped where
// its window is not the one with the most context around its start, or
// when it is longer than the limit; the best remaining one wins, with
// softmax probabilities over the distinct answers.
#include "TestFiles.h"

#include "training/data/DataError.h"
#include "training/squad/SquadEval.h"
#include "training/squad/SquadPredict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

namespace {

using namespace ferry::squad;
using ferry::text::Tokenizer;
using ferry::text::Vocab;

TEST(SquadPredict, FinalTextRecoversTheOriginal) {
  // The basic tokenizer splits "Smith's" into smith ' s; the prediction
  // "steve smith" maps back to the original's first 11 characters.
  EXPECT_EQ(finalText("steve smith", "Steve Smith's", true), "Steve Smith");
  // Accents and case come back from the original.
  EXPECT_EQ(finalText("cafe", "Café,", true), "Café");
  EXPECT_EQ(finalText("Café", "Café,", false), "Café");
  // Not found, or empty: the whole original.
  EXPECT_EQ(finalText("zebra", "Steve Smith's", true), "Steve Smith's");
  EXPECT_EQ(finalText("", "Steve", true), "Steve");
}

TEST(SquadPredict, BestSpanWhereItsWindowHasTheMostContext) {
  std::vector<std::string> tokens = {"[PAD]",  "[UNK]", "[CLS]", "[SEP]",
                                     "[MASK]", "q1",    "q2"};
  Example e;
  e.id = "x1";
  e.question = "q1 q2";
  for (int w = 0; w < 30; ++w) {
    tokens.push_back("w" + std::to_string(w));
    e.words.push_back("W" + std::to_string(w)); // cased in the context
  }
  Vocab vocab = Vocab::fromTokens(tokens, "test vocabulary");
  Tokenizer tokenizer(vocab, true);
  FeatureOptions fo;
  fo.seq = 16;
  fo.docStride = 4;
  std::vector<Feature> f = makeFeatures({e}, tokenizer, fo, false);
  ASSERT_EQ(f.size(), 6u); // windows at 0, 4, ..., 20 (SquadDataTest)
  std::vector<std::vector<float>> start(f.size()), end(f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    start[i].assign(f[i].ids.size(), 0.0f);
    end[i].assign(f[i].ids.size(), 0.0f);
  }
  // Token position of word w in window k: 4 + w - 4k.
  auto pos = [](int w, int k) { return 4 + w - 4 * k; };
  // Best by logits but skipped: w8..w9 in window 0 (window 1 has more
  // context around w8: min(4, 6) against min(8, 2)), and w14..w20 in
  // window 3 (7 tokens > 3).
  start[0][pos(8, 0)] = 6, end[0][pos(9, 0)] = 6;
  start[3][pos(14, 3)] = 7, end[3][pos(20, 3)] = 7;
  // The answer: w12..w13 in window 2 (w12's best: min(4, 6)), and a
  // runner-up w12 alone. Every other top logit is 0, on [CLS] and the
  // question, which are no answer.
  start[2][pos(12, 2)] = 5, end[2][pos(13, 2)] = 5, end[2][pos(12, 2)] = 4;
  PredictOptions po;
  po.maxAnswerLength = 3;
  po.nBest = 3;
  auto answers = predictAnswers({e}, f, start, end, vocab, po);
  ASSERT_EQ(answers.count("x1"), 1u);
  const std::vector<Candidate> &c = answers["x1"];
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].text, "W12 W13");
  EXPECT_EQ(c[0].startLogit, 5);
  EXPECT_EQ(c[0].endLogit, 5);
  EXPECT_EQ(c[1].text, "W12");
  // Softmax over the totals 10 and 9.
  EXPECT_NEAR(c[0].probability, 1 / (1 + std::exp(-1.0)), 1e-12);
  EXPECT_NEAR(c[1].probability, std::exp(-1.0) / (1 + std::exp(-1.0)), 1e-12);
  // Without the answer's logits no span qualifies: the reference's
  // "empty" answer.
  start[2][pos(12, 2)] = 0, end[2][pos(13, 2)] = 0, end[2][pos(12, 2)] = 0;
  auto none = predictAnswers({e}, f, start, end, vocab, po);
  ASSERT_EQ(none["x1"].size(), 1u);
  EXPECT_EQ(none["x1"][0].text, "empty");
  po.nBest = 0;
  EXPECT_THROW(predictAnswers({e}, f, start, end, vocab, po),
               ferry::data::DataError);
}

// The reference's two files, written atomically, read back by the
// evaluation: predictions.json scores as its answers do.
TEST(SquadPredict, WritesPredictionsTheEvaluationReads) {
  std::string dir = "/tmp/ferry-squad-out-" + std::to_string(getpid());
  std::map<std::string, std::vector<Candidate>> answers = {
      {"q1", {{"Denver Broncos", 5, 4, 0.7}, {"Broncos", 4, 4, 0.3}}},
      {"q2", {{"Santa Clara", 3, 2, 1.0}}}};
  writePredictions(answers, dir + "/predictions.json",
                   dir + "/nbest_predictions.json");
  std::map<std::string, std::string> read =
      readPredictions(dir + "/predictions.json");
  EXPECT_EQ(read, (std::map<std::string, std::string>{{"q1", "Denver Broncos"},
                                                      {"q2", "Santa Clara"}}));
  std::string nbest = ferry::test::readFile(dir + "/nbest_predictions.json");
  EXPECT_NE(nbest.find("\"probability\": 0.3"), std::string::npos) << nbest;
  EXPECT_NE(nbest.find("\"start_logit\": 4.0"), std::string::npos) << nbest;
  Scores s =
      evaluate({{"q1", {"the Denver Broncos"}}, {"q2", {"Santa Clara"}}}, read);
  EXPECT_DOUBLE_EQ(s.exactMatch, 100.0);
  std::filesystem::remove_all(dir);
}

} // namespace
