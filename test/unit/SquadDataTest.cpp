// SQuAD v1.1 examples and features (training/squad/SquadData), on cases
// worked out by hand: words and each answer's words from character offsets
// (in code points, across runs of whitespace); windows of the context
// `docStride` tokens apart, each token's best window (the most context
// around it), the answer's tokens in the windows that hold it and [CLS]
// elsewhere; the answer moved to the tightest span that tokenizes as it;
// and the file errors: an answer not at its offset, several answers in
// training.
#include "TestFiles.h"

#include "training/data/DataError.h"
#include "training/squad/SquadData.h"

#include <gtest/gtest.h>

#include <unistd.h>

namespace {

using namespace ferry::squad;
using ferry::text::Tokenizer;
using ferry::text::Vocab;

std::string writeSquad(const std::string &context, const std::string &answers,
                       const std::string &question = "q1 q2") {
  std::string path =
      "/tmp/ferry-squad-data-" + std::to_string(getpid()) + ".json";
  ferry::test::writeFile(
      path,
      R"({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": ")" +
          context + R"(", "qas": [{"id": "x1", "question": ")" + question +
          R"(", "answers": [)" + answers + "]}]}]}]}");
  return path;
}

TEST(SquadData, WordsAndAnswerWordsFromCharacterOffsets) {
  // "Ünï" is 3 code points (5 bytes): offsets count code points.
  std::string path =
      writeSquad(R"(  Ünï Bowl\t50  was played at Levi's Stadium.)",
                 R"({"text": "Levi's Stadium.", "answer_start": 29})");
  std::vector<Example> ex = readExamples(path, true);
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].words,
            (std::vector<std::string>{"Ünï", "Bowl", "50", "was", "played",
                                      "at", "Levi's", "Stadium."}));
  EXPECT_EQ(ex[0].startWord, 6);
  EXPECT_EQ(ex[0].endWord, 7);
  EXPECT_EQ(ex[0].answer, "Levi's Stadium.");
  // Not training: no answer is needed or read.
  EXPECT_EQ(readExamples(path, false)[0].startWord, -1);
  std::remove(path.c_str());
}

TEST(SquadData, AnAnswerNotAtItsOffsetIsAnError) {
  std::string path = writeSquad("Denver Broncos won.",
                                R"({"text": "Broncos", "answer_start": 8})");
  try {
    readExamples(path, true);
    FAIL() << "no error";
  } catch (const ferry::data::DataError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  path + ": data[0].paragraphs[0].qas[0].answers[0] (question "
                         "x1): the answer \"Broncos\" is not at answer_start 8 "
                         "of its context (there the context reads \"roncos "
                         "\")"),
              std::string::npos)
        << e.what();
  }
  std::string two = writeSquad("Denver Broncos won.",
                               R"({"text": "Broncos", "answer_start": 7},
                                {"text": "Denver", "answer_start": 0})");
  EXPECT_THROW(readExamples(two, true), ferry::data::DataError);
  EXPECT_EQ(readExamples(two, false).size(), 1u);
  // An offset past any context (no overflow on the way) is the same error.
  std::string far =
      writeSquad("Denver Broncos won.",
                 R"({"text": "Broncos", "answer_start": 9223372036854775800})");
  EXPECT_THROW(readExamples(far, true), ferry::data::DataError);
  // An answer that starts in the context's leading spaces has no first
  // word: skipped and counted, as the reference cannot place it either.
  std::string lead =
      writeSquad("  Denver won.", R"({"text": " Denver", "answer_start": 1})");
  int64_t skipped = 0;
  EXPECT_TRUE(readExamples(lead, true, &skipped).empty());
  EXPECT_EQ(skipped, 1);
  std::remove(path.c_str());
}

TEST(SquadData, WindowsMaxContextAndAnswerTokens) {
  // 30 words w0..w29, one token each; question 2 tokens; 16 tokens a
  // feature: 16 - 2 - 3 = 11 context tokens a window, 4 apart: windows at
  // 0, 4, 8, 12, 16, 20 (the last 10 long).
  std::vector<std::string> tokens = {"[PAD]",  "[UNK]", "[CLS]", "[SEP]",
                                     "[MASK]", "q1",    "q2"};
  std::string context;
  for (int w = 0; w < 30; ++w) {
    tokens.push_back("w" + std::to_string(w));
    context += (w ? " " : "") + std::string("w") + std::to_string(w);
  }
  Vocab vocab = Vocab::fromTokens(tokens, "test vocabulary");
  Tokenizer tokenizer(vocab, true);
  // The answer: w12 w13.
  size_t at = context.find("w12");
  std::string path =
      writeSquad(context, R"({"text": "w12 w13", "answer_start": )" +
                              std::to_string(at) + "}");
  std::vector<Example> ex = readExamples(path, true);
  FeatureOptions o;
  o.seq = 16;
  o.docStride = 4;
  std::vector<Feature> f = makeFeatures(ex, tokenizer, o, true);
  ASSERT_EQ(f.size(), 6u);
  FeatureOptions still = o;
  still.docStride = 0; // would never move on
  EXPECT_THROW(makeFeatures(ex, tokenizer, still, true),
               ferry::data::DataError);
  for (size_t w = 0; w < f.size(); ++w) {
    int64_t start = 4 * static_cast<int64_t>(w);
    int64_t length = w < 5 ? 11 : 10;
    ASSERT_EQ(static_cast<int64_t>(f[w].ids.size()), 2 + 2 + length + 1);
    EXPECT_EQ(f[w].ids[0], vocab.cls());
    EXPECT_EQ(f[w].ids[1], vocab.find("q1"));
    EXPECT_EQ(f[w].ids[3], vocab.sep());
    EXPECT_EQ(f[w].ids[4], vocab.find("w" + std::to_string(start)));
    EXPECT_EQ(f[w].word[4], start);
    EXPECT_EQ(f[w].word[0], -1);
    EXPECT_EQ(f[w].segmentIds[3], 0);
    EXPECT_EQ(f[w].segmentIds[4], 1);
    // Windows 1 (4..14), 2 (8..18), 3 (12..22) hold w12 w13; the others
    // point at [CLS].
    bool holds = w >= 1 && w <= 3;
    EXPECT_EQ(f[w].start, holds ? 12 - start + 4 : 0) << "window " << w;
    EXPECT_EQ(f[w].end, holds ? 13 - start + 4 : 0) << "window " << w;
  }
  // Token w10 is in windows 0 (0..10: min(10, 0)), 1 (4..14: min(6, 4) =
  // 4) and 2 (8..18: min(2, 8) = 2): window 1's.
  EXPECT_EQ(f[0].maxContext[4 + 10], 0);
  EXPECT_EQ(f[1].maxContext[4 + 6], 1);
  EXPECT_EQ(f[2].maxContext[4 + 2], 0);
  std::remove(path.c_str());
}

TEST(SquadData, TheAnswerSpanTightensToItsTokens) {
  // "(1895–1943)" is one word whose tokens are ( 1895 – 1943 ): the answer
  // "1895" is the second token, not the whole word.
  Vocab vocab = Vocab::fromTokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                   "born", "(", ")", "1895", "1943", "–", "q"},
                                  "test vocabulary");
  Tokenizer tokenizer(vocab, true);
  std::string path = writeSquad("born (1895–1943)",
                                R"({"text": "1895", "answer_start": 6})", "q");
  std::vector<Example> ex = readExamples(path, true);
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].startWord, 1);
  std::vector<Feature> f = makeFeatures(ex, tokenizer, FeatureOptions{}, true);
  ASSERT_EQ(f.size(), 1u);
  // [CLS] q [SEP] born ( 1895 – 1943 ) [SEP]: 1895 is token 5.
  EXPECT_EQ(f[0].ids[5], vocab.find("1895"));
  EXPECT_EQ(f[0].start, 5);
  EXPECT_EQ(f[0].end, 5);
  std::remove(path.c_str());
}

} // namespace
