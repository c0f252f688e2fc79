// Masked-LM / next-sentence samples from text (training/text/
// PretrainingData): on documents whose every token names its document,
// sentence and place, each sample is [CLS] a [SEP] b [SEP] within the
// length, a is a run of one document's text, b continues it (label 0) or
// comes from another document (label 1, about half); the masked slots
// undo to the original text, number round(15% of the length) capped by the
// predictions, and split 80/10/10 between [MASK], the same token and a
// random one; whole-word masking takes every piece of a word; a seed gives
// the same samples; text that is not UTF-8 names its file and line.
#include "TestFiles.h"

#include "training/data/DataError.h"
#include "training/text/PretrainingData.h"

#include <gtest/gtest.h>

#include <cmath>
#include <unistd.h>

namespace {

using namespace ferry::text;

// Token ids: 5 specials ([PAD] [UNK] [CLS] [SEP] [MASK]), then one token per
// (document, sentence, place): id = 5 + (d * 64 + s) * 32 + p, p < 32.
// Tokens whose place is odd are "##" continuations when `pieces` is set.
Vocab makeVocab(bool pieces) {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                     "[MASK]"};
  for (int i = 0; i < 16 * 64 * 32; ++i)
    tokens.push_back((pieces && (i % 32) % 2 == 1 ? "##t" : "t") +
                     std::to_string(i));
  return Vocab::fromTokens(tokens, "test vocabulary");
}

int32_t tokenId(int d, int s, int p) { return 5 + (d * 64 + s) * 32 + p; }

// 12 documents of 3-20 sentences of 4-31 tokens (seeded sizes).
std::vector<Document> makeDocuments() {
  std::vector<Document> docs;
  uint32_t state = 7;
  auto next = [&](int n) {
    state = state * 1664525u + 1013904223u;
    return static_cast<int>((state >> 8) % static_cast<uint32_t>(n));
  };
  for (int d = 0; d < 12; ++d) {
    Document doc;
    int sentences = 3 + next(18);
    for (int s = 0; s < sentences; ++s) {
      std::vector<int32_t> sentence;
      int length = 4 + next(28);
      for (int p = 0; p < length; ++p)
        sentence.push_back(tokenId(d, s, p));
      doc.push_back(sentence);
    }
    docs.push_back(doc);
  }
  return docs;
}

struct Place {
  int d, s, p;
};
Place placeOf(int32_t id) {
  int i = id - 5;
  return {i / 32 / 64, i / 32 % 64, i % 32};
}

// The text order of two places: the next token of one document.
bool follows(Place a, Place b) {
  return a.d == b.d &&
         ((a.s == b.s && a.p + 1 == b.p) || (b.s == a.s + 1 && b.p == 0));
}

TEST(PretrainingData, SamplesAreSegmentPairsOfTheDocuments) {
  Vocab vocab = makeVocab(false);
  std::vector<Document> docs = makeDocuments();
  SampleOptions o;
  o.seq = 64;
  o.predictions = 8;
  o.dupeFactor = 3;
  std::vector<Sample> samples = makeSamples(docs, vocab, o);
  ASSERT_GT(samples.size(), 100u);
  int64_t randomNext = 0, masked = 0, asMask = 0, asSelf = 0;
  for (const Sample &s : samples) {
    int64_t n = static_cast<int64_t>(s.ids.size());
    ASSERT_LE(n, o.seq);
    ASSERT_EQ(s.segmentIds.size(), s.ids.size());
    // Undo the masking: the labels at their positions.
    std::vector<int32_t> text = s.ids;
    ASSERT_EQ(s.maskedPositions.size(), s.maskedIds.size());
    int64_t expected = std::min<int64_t>(
        o.predictions,
        std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(
                                 0.15 * static_cast<double>(n)))));
    EXPECT_EQ(static_cast<int64_t>(s.maskedPositions.size()), expected);
    for (size_t k = 0; k < s.maskedPositions.size(); ++k) {
      int32_t at = s.maskedPositions[k];
      if (k > 0) {
        ASSERT_LT(s.maskedPositions[k - 1], at) << "ascending";
      }
      ASSERT_GT(at, 0);
      ASSERT_LT(at, n - 1);
      masked += 1;
      asMask += s.ids[at] == vocab.mask();
      asSelf += s.ids[at] == s.maskedIds[k];
      text[at] = s.maskedIds[k];
    }
    // [CLS] a [SEP] b [SEP], segments 0 then 1.
    ASSERT_EQ(text.front(), vocab.cls());
    ASSERT_EQ(text.back(), vocab.sep());
    int64_t sep =
        std::find(text.begin() + 1, text.end(), vocab.sep()) - text.begin();
    ASSERT_LT(sep, n - 1) << "two segments";
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(s.segmentIds[i], i <= sep ? 0 : 1) << "position " << i;
    ASSERT_GE(sep, 2);
    // a and b each a run of one document's text.
    for (int64_t i = 2; i < n - 1; ++i) {
      if (i != sep && i != sep + 1) {
        ASSERT_TRUE(follows(placeOf(text[i - 1]), placeOf(text[i])))
            << "position " << i << " of a run";
      }
    }
    Place lastA = placeOf(text[sep - 1]), firstB = placeOf(text[sep + 1]);
    if (s.randomNext) {
      randomNext += 1;
      EXPECT_NE(lastA.d, firstB.d) << "a random next sentence";
    } else {
      // b starts at the next sentence of a's document (a whole sentence,
      // unless truncation took its front).
      EXPECT_EQ(lastA.d, firstB.d);
      EXPECT_GT(firstB.s, lastA.s);
    }
  }
  double share = static_cast<double>(randomNext) / samples.size();
  EXPECT_GT(share, 0.4);
  EXPECT_LT(share, 0.75);
  // 80% [MASK]; the same token 10% (plus random picks of it, rare).
  EXPECT_NEAR(static_cast<double>(asMask) / masked, 0.8, 0.03);
  EXPECT_NEAR(static_cast<double>(asSelf) / masked, 0.1, 0.03);
}

TEST(PretrainingData, WholeWordMaskingTakesEveryPiece) {
  Vocab vocab = makeVocab(true);
  SampleOptions o;
  o.seq = 64;
  o.predictions = 10;
  o.dupeFactor = 2;
  o.wholeWordMask = true;
  for (const Sample &s : makeSamples(makeDocuments(), vocab, o)) {
    std::vector<bool> isMasked(s.ids.size(), false);
    std::vector<int32_t> text = s.ids;
    for (size_t k = 0; k < s.maskedPositions.size(); ++k) {
      isMasked[s.maskedPositions[k]] = true;
      text[s.maskedPositions[k]] = s.maskedIds[k];
    }
    auto piece = [&](size_t i) {
      return vocab.token(text[i]).rfind("##", 0) == 0;
    };
    for (size_t i = 1; i + 1 < text.size(); ++i) {
      if (!isMasked[i])
        continue;
      // The word's first piece and its continuations are all masked.
      if (piece(i) && text[i - 1] != vocab.sep() &&
          text[i - 1] != vocab.cls()) {
        EXPECT_TRUE(isMasked[i - 1]) << "piece " << i << " without its head";
      }
      if (i + 1 < text.size() && piece(i + 1)) {
        EXPECT_TRUE(isMasked[i + 1]) << "word at " << i << " cut";
      }
    }
  }
}

TEST(PretrainingData, ASeedGivesTheSameSamples) {
  Vocab vocab = makeVocab(false);
  std::vector<Document> docs = makeDocuments();
  SampleOptions o;
  o.seq = 48;
  auto same = [](const std::vector<Sample> &a, const std::vector<Sample> &b) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].ids != b[i].ids || a[i].maskedPositions != b[i].maskedPositions)
        return false;
    return true;
  };
  std::vector<Sample> first = makeSamples(docs, vocab, o);
  EXPECT_TRUE(same(first, makeSamples(docs, vocab, o)));
  o.seed += 1;
  EXPECT_FALSE(same(first, makeSamples(docs, vocab, o)));
  // And the batch: padded rows, a weight per masked slot.
  ferry::data::HostBatch batch;
  toBatch(first, 48, 20, batch);
  ASSERT_EQ(batch.samples, static_cast<int64_t>(first.size()));
  for (size_t r = 0; r < first.size(); ++r) {
    int64_t n = static_cast<int64_t>(first[r].ids.size());
    EXPECT_EQ(batch.inputMask[r * 48 + n - 1], 1);
    if (n < 48) {
      EXPECT_EQ(batch.inputMask[r * 48 + n], 0);
    }
    size_t slots = first[r].maskedPositions.size();
    EXPECT_EQ(batch.maskedWeights[r * 20 + slots - 1], 1.0f);
    if (slots < 20) {
      EXPECT_EQ(batch.maskedWeights[r * 20 + slots], 0.0f);
    }
    EXPECT_EQ(batch.nspLabels[r], first[r].randomNext ? 1 : 0);
  }
}

TEST(PretrainingData, DocumentsAreBlankLineSeparatedAndUtf8) {
  std::string path = "/tmp/ferry-corpus-" + std::to_string(getpid()) + ".txt";
  // A line of an ideographic space (U+3000) is blank too (Python's strip).
  ferry::test::writeFile(path, "\n\nfirst line.\nsecond line.\n \t\n\nthird "
                               "one.\n\xe3\x80\x80\nthird one.\n\n");
  Vocab vocab =
      Vocab::fromTokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "first",
                         "second", "third", "line", "one", "."},
                        "test vocabulary");
  Tokenizer tokenizer(vocab, true);
  CorpusCounts counts;
  std::vector<Document> docs = readDocuments(path, tokenizer, counts);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0].size(), 2u);
  EXPECT_EQ(docs[1].size(), 1u);
  EXPECT_EQ(docs[2].size(), 1u);
  EXPECT_EQ(docs[0][1], (std::vector<int32_t>{6, 8, 10}));
  EXPECT_EQ(counts.documents, 3);
  EXPECT_EQ(counts.sentences, 4);
  EXPECT_EQ(counts.tokens, 12);
  ferry::test::writeFile(path, "fine.\nnot \xe9t\xe9 UTF-8\n");
  try {
    readDocuments(path, tokenizer, counts);
    FAIL() << "no error";
  } catch (const ferry::data::DataError &e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: the text is not UTF-8 "
                                                "(byte 5 of the line)"),
              std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
}

} // namespace
