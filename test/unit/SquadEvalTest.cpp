// SQuAD v1.1's official evaluation (training/squad/SquadEval): the
// normalisation, exact match and F1 on cases whose scores are worked out
// by hand in the comments, best over the gold answers, unanswered
// questions at 0, and the files' errors.
#include "TestFiles.h"

#include "training/data/DataError.h"
#include "training/squad/SquadEval.h"

#include <gtest/gtest.h>

#include <unistd.h>

namespace {

using namespace ferry::squad;

TEST(SquadEval, NormalisesAsTheOfficialScript) {
  // Lower case, ASCII punctuation out, articles out, spaces collapsed.
  EXPECT_EQ(normalizeAnswer("The  Quick, Brown fox!"), "quick brown fox");
  EXPECT_EQ(normalizeAnswer("an apple a day"), "apple day");
  // Whole words only: "Theory", "Anna" stay.
  EXPECT_EQ(normalizeAnswer("Theory of Anna"), "theory of anna");
  // Punctuation goes before the articles: "the_cat" is "thecat" ('_' is
  // in string.punctuation), and "a.b" is "ab".
  EXPECT_EQ(normalizeAnswer("the_cat a.b"), "thecat ab");
  // Not ASCII: lower-cased, kept (no accent stripping); «» stay.
  EXPECT_EQ(normalizeAnswer("Ünïcode\u00a0STRASSE «Œuvre»"),
            "ünïcode strasse «œuvre»");
  EXPECT_EQ(normalizeAnswer("  "), "");
}

TEST(SquadEval, ExactMatchAndF1ByHand) {
  EXPECT_EQ(exactMatch("Denver Broncos", "the denver broncos."), 1.0);
  EXPECT_EQ(exactMatch("Denver", "Denver Broncos"), 0.0);
  // 2 of 3 predicted tokens right, both gold ones found: p 2/3, r 1,
  // F1 = 2 (2/3)(1) / (5/3) = 0.8.
  EXPECT_DOUBLE_EQ(f1Score("Denver Broncos won", "Denver Broncos"), 0.8);
  // Multisets: cat cat dog vs cat dog dog share one cat and one dog:
  // p = r = 2/3, F1 = 2/3.
  EXPECT_DOUBLE_EQ(f1Score("cat cat dog", "cat dog dog"), 2.0 / 3.0);
  // Nothing in common (articles do not count): 0.
  EXPECT_EQ(f1Score("the", "a"), 0.0);
  EXPECT_EQ(f1Score("", "answer"), 0.0);
}

TEST(SquadEval, BestOverGoldAnswersUnansweredScoreZero) {
  std::vector<GoldQuestion> questions = {
      {"q1", {"Denver Broncos", "Broncos"}},
      {"q2", {"Santa Clara, California"}},
      {"q3", {"February 7, 2016"}},
  };
  std::map<std::string, std::string> predictions = {
      {"q1", "The Broncos"}, // matches the second answer exactly
      {"q2", "Santa Clara"}, // p 1, r 2/3: F1 0.8, EM 0
      {"extra", "ignored"},
  };
  std::vector<std::string> missing;
  Scores s = evaluate(questions, predictions,
                      [&](const std::string &id) { missing.push_back(id); });
  EXPECT_EQ(s.questions, 3);
  EXPECT_EQ(s.unanswered, 1);
  EXPECT_EQ(missing, std::vector<std::string>{"q3"});
  // EM (1 + 0 + 0) / 3, F1 (1 + 0.8 + 0) / 3, in percent.
  EXPECT_DOUBLE_EQ(s.exactMatch, 100.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.f1, 60.0);
}

TEST(SquadEval, FilesAreCheckedWithThePlaceNamed) {
  std::string dir = "/tmp/ferry-squad-" + std::to_string(getpid());
  std::string data = dir + "-data.json", preds = dir + "-pred.json";
  ferry::test::writeFile(
      data, R"({"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": "c", "qas": [{"id": "a", "question": "?",
          "answers": [{"text": "x", "answer_start": 0}]},
          {"id": "b", "question": "?", "answers": [{"answer_start": 0}]}]}]}]})");
  try {
    readGoldQuestions(data);
    FAIL() << "no error";
  } catch (const ferry::data::DataError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  data + ": data[0].paragraphs[0].qas[1].answers[0] has no "
                         "string \"text\""),
              std::string::npos)
        << e.what();
  }
  ferry::test::writeFile(data, "{\"data\": [");
  EXPECT_THROW(readGoldQuestions(data), ferry::data::DataError);
  ferry::test::writeFile(preds, R"({"a": 3})");
  try {
    readPredictions(preds);
    FAIL() << "no error";
  } catch (const ferry::data::DataError &e) {
    EXPECT_NE(std::string(e.what()).find("the prediction for \"a\" is not a "
                                         "string"),
              std::string::npos)
        << e.what();
  }
  std::remove(data.c_str());
  std::remove(preds.c_str());
}

} // namespace
