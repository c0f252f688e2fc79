// BERT's tokenizer (training/text): hand-checked hard cases of the basic
// tokenizer (accents, CJK, emoji, controls, Unicode whitespace, punctuation
// runs, capital sigma, empty lines, tokenizers' Unicode 8.0 classes),
// WordPiece's greedy longest match and its [UNK]s, the vocabulary's checks,
// and a property: with a vocabulary that holds every printable ASCII
// character (alone and as "##c"), each word's pieces, "##" dropped and
// joined, give back the basic tokenizer's word.
#include "TestFiles.h"

#include "training/data/DataError.h"
#include "training/text/Tokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <unistd.h>

namespace {

using ferry::text::BasicTokenizer;
using ferry::text::Tokenizer;
using ferry::text::Vocab;
using Tokens = std::vector<std::string>;

Tokens basic(const std::string &text, bool lowerCase = true) {
  return BasicTokenizer{lowerCase}.tokenize(text);
}

std::vector<std::string> specials() {
  return {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
}

TEST(BasicTokenizer, LowerCasesAndStripsAccents) {
  EXPECT_EQ(basic("Héllo, WORLD!"), (Tokens{"hello", ",", "world", "!"}));
  EXPECT_EQ(basic("Café naïve Ångström"),
            (Tokens{"cafe", "naive", "angstrom"}));
  // Decomposed input: the combining acute accent goes the same way.
  EXPECT_EQ(basic("Cafe\xcc\x81"), (Tokens{"cafe"}));
  // U+0130 (capital I with dot): NFD splits it into I and U+0307, which
  // goes with the accents before lower-casing.
  EXPECT_EQ(basic("\xc4\xb0stanbul"), (Tokens{"istanbul"}));
}

TEST(BasicTokenizer, KeepsCaseAndAccentsForCasedVocabularies) {
  EXPECT_EQ(basic("Héllo WORLD", false), (Tokens{"Héllo", "WORLD"}));
  // No NFC (tokenizers has none): e + combining acute stays two characters.
  EXPECT_EQ(basic("He\xcc\x81llo", false), (Tokens{"He\xcc\x81llo"}));
}

TEST(BasicTokenizer, SplitsEachCjkCharacter) {
  EXPECT_EQ(basic("我爱中国"), (Tokens{"我", "爱", "中", "国"}));
  EXPECT_EQ(basic("ab中cd"), (Tokens{"ab", "中", "cd"}));
  // Hiragana and Hangul are not in the CJK blocks: whole words.
  EXPECT_EQ(basic("ひらがな 한국어", false), (Tokens{"ひらがな", "한국어"}));
  // Uncased, NFD takes the voicing mark off が (U+3099 is Mn: stripped, as
  // the reference tokenizers do) and splits the Hangul syllables into
  // their jamo (Lo: kept).
  EXPECT_EQ(basic("ひらがな 한국어"),
            (Tokens{"ひらかな", "\u1112\u1161\u11ab\u1100\u116e\u11a8"
                                "\u110b\u1165"}));
}

TEST(BasicTokenizer, KeepsSymbolsAndEmojiAsWords) {
  // ❤ (So) and 😀 (So) are neither punctuation nor CJK.
  EXPECT_EQ(basic("I ❤ 😀!"), (Tokens{"i", "❤", "😀", "!"}));
  EXPECT_EQ(basic("a😀b"), (Tokens{"a😀b"}));
}

TEST(BasicTokenizer, DropsControlsAndSplitsOnUnicodeWhitespace) {
  // \x01 (Cc), U+200B (Cf), NUL and U+FFFD are removed, not split on.
  EXPECT_EQ(basic(std::string("a\x01"
                              "b\xe2\x80\x8b"
                              "c") +
                  '\0' +
                  "d\xef\xbf\xbd"
                  "e"),
            (Tokens{"abcde"}));
  EXPECT_EQ(basic("a\tb\nc\rd"), (Tokens{"a", "b", "c", "d"}));
  // No-break space, ideographic space, line separator: White_Space.
  EXPECT_EQ(basic("a\xc2\xa0"
                  "b\xe3\x80\x80"
                  "c\xe2\x80\xa8"
                  "d"),
            (Tokens{"a", "b", "c", "d"}));
}

TEST(BasicTokenizer, SplitsEveryPunctuationCharacter) {
  EXPECT_EQ(basic("wait...what?!"),
            (Tokens{"wait", ".", ".", ".", "what", "?", "!"}));
  // ASCII symbols count as punctuation; ¿ and « » are P categories.
  EXPECT_EQ(basic("$5 a^b`c"), (Tokens{"$", "5", "a", "^", "b", "`", "c"}));
  EXPECT_EQ(basic("¿Qué? «oui»"), (Tokens{"¿", "que", "?", "«", "oui", "»"}));
  EXPECT_EQ(basic("don't"), (Tokens{"don", "'", "t"}));
}

TEST(BasicTokenizer, EmptyAndBlankLinesHaveNoTokens) {
  EXPECT_TRUE(basic("").empty());
  EXPECT_TRUE(basic(" \t  \n ").empty());
}

TEST(BasicTokenizer, LowersCapitalSigmaOneCharacterAtATime) {
  // σ at the end of a word too (Rust's char::to_lowercase: no final sigma,
  // which Python's str.lower() has); a written ς stays.
  EXPECT_EQ(basic("ΟΔΟΣ ΣΑΣ ΣΑ"), (Tokens{"οδοσ", "σασ", "σα"}));
  EXPECT_EQ(basic("ΟΔΟΣ. οδος"), (Tokens{"οδοσ", ".", "οδος"}));
}

TEST(BasicTokenizer, HasTokenizersUnicodeClasses) {
  // Unicode 8.0's categories: U+2E52 (Po since 13.0) is no punctuation,
  // U+1734 (Mn until 14.0) is a stripped mark; private use (Co) is removed,
  // unassigned (Cn) kept.
  EXPECT_EQ(basic("a\u2e52b g\u1734h"), (Tokens{"a\u2e52b", "gh"}));
  EXPECT_EQ(basic("a\ue000b c\u0378d"), (Tokens{"ab", "c\u0378d"}));
  // Unicode 9.0's normalisation: U+11938 (13.0) does not decompose.
  EXPECT_EQ(basic("\U00011938"), (Tokens{"\U00011938"}));
  // Its CJK ranges skip U+2B820-U+2B91F.
  EXPECT_EQ(basic("a\U0002B91Fb\U0002B920c"),
            (Tokens{"a\U0002B91Fb", "\U0002B920", "c"}));
}

TEST(BasicTokenizer, NamesTheByteWhereTextStopsBeingUtf8) {
  try {
    basic("ab\xff"
          "cd");
    FAIL() << "no error";
  } catch (const ferry::data::DataError &e) {
    EXPECT_NE(std::string(e.what()).find("not UTF-8 at byte 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(WordPiece, LongestMatchFirstWithContinuations) {
  std::vector<std::string> tokens = specials();
  for (const char *t : {"un", "##aff", "##able", "want", "##want", "##ed",
                        "runn", "##ing", ",", "a", "##a"})
    tokens.push_back(t);
  Vocab vocab = Vocab::fromTokens(tokens, "test vocabulary");
  Tokenizer tokenizer(vocab, true);
  auto ids = [&](std::initializer_list<const char *> names) {
    std::vector<int32_t> out;
    for (const char *n : names)
      out.push_back(vocab.find(n));
    return out;
  };
  EXPECT_EQ(tokenizer.encode("unaffable"), ids({"un", "##aff", "##able"}));
  EXPECT_EQ(tokenizer.encode("UNwanted, running"),
            ids({"un", "##want", "##ed", ",", "runn", "##ing"}));
  // A word with an unmatched piece is one [UNK], whatever matched before.
  EXPECT_EQ(tokenizer.encode("unwantedX"), ids({"[UNK]"}));
  EXPECT_EQ(tokenizer.encode("xyz un"), ids({"[UNK]", "un"}));
  // Over 100 characters: [UNK] without trying.
  EXPECT_EQ(tokenizer.encode(std::string(100, 'a')).size(), 100u);
  EXPECT_EQ(tokenizer.encode(std::string(101, 'a')), ids({"[UNK]"}));
  EXPECT_TRUE(tokenizer.encode("").empty());
}

TEST(WordPiece, PiecesRejoinToTheBasicTokensOverPrintableAscii) {
  std::vector<std::string> tokens = specials();
  for (char c = 0x21; c < 0x7f; ++c) {
    tokens.push_back(std::string(1, c));
    tokens.push_back("##" + std::string(1, c));
  }
  // Longer pieces too, so the greedy match has choices to make.
  for (const char *t : {"th", "##he", "##ing", "in", "##in", "an", "##an"})
    tokens.push_back(t);
  Vocab vocab = Vocab::fromTokens(tokens, "printable ASCII");
  ferry::text::WordPiece wordPiece(vocab);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> pick(0x20, 0x7e), length(0, 60);
  for (int trial = 0; trial < 500; ++trial) {
    std::string text;
    for (int i = length(rng); i > 0; --i)
      text += static_cast<char>(pick(rng));
    for (bool lowerCase : {true, false}) {
      for (const std::string &word : basic(text, lowerCase)) {
        std::vector<int32_t> ids;
        wordPiece.pieces(word, ids);
        std::string joined;
        for (size_t i = 0; i < ids.size(); ++i) {
          const std::string &piece = vocab.token(ids[i]);
          ASSERT_EQ(piece.rfind("##", 0) == 0 && piece.size() > 2, i > 0)
              << "piece " << i << " of \"" << word << "\"";
          joined += i > 0 ? piece.substr(2) : piece;
        }
        EXPECT_EQ(joined, word) << "in \"" << text << "\"";
      }
    }
  }
}

TEST(Vocab, NamesTheMissingSpecialTokensAndTheFile) {
  std::string path = "/tmp/ferry-vocab-" + std::to_string(getpid()) + ".txt";
  ferry::test::writeFile(path, "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
  try {
    Vocab::load(path);
    FAIL() << "no error";
  } catch (const ferry::data::DataError &e) {
    std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("has no [MASK]"), std::string::npos) << what;
  }
  ferry::test::writeFile(path,
                         "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nok\nbad\xc3\n");
  try {
    Vocab::load(path);
    FAIL() << "no error";
  } catch (const ferry::data::DataError &e) {
    EXPECT_NE(std::string(e.what()).find(path + ":7: the vocabulary is not "
                                                "UTF-8"),
              std::string::npos)
        << e.what();
  }
  // CRLF lines, and ids by line.
  ferry::test::writeFile(path, "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\n"
                               "hello\r\n");
  Vocab vocab = Vocab::load(path);
  EXPECT_EQ(vocab.size(), 6);
  EXPECT_EQ(vocab.find("hello"), 5);
  EXPECT_EQ(vocab.mask(), 4);
  EXPECT_EQ(vocab.pad(), 0);
  std::remove(path.c_str());
}

} // namespace
