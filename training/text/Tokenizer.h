// BERT's tokenizer as Hugging Face's `tokenizers` library runs it (the Rust
// BertWordPieceTokenizer, the fast tokenizer `transformers` loads from a
// vocab.txt): BertNormalizer, then BertPreTokenizer, then WordPiece.
//
//   normalize  remove NUL, U+FFFD and the Cc, Cf and Co characters but tab,
//              newline and carriage return; every White_Space character a
//              space; a space each side of a CJK ideograph; for an uncased
//              vocabulary, NFD without the Mn marks, then lower-case one
//              character at a time
//   split      on whitespace, then each punctuation character (ASCII's
//              non-alphanumeric printables and the P categories) a token
//   WordPiece  greedy longest match first, "##" on the pieces after the
//              first, [UNK] for a word with no match or over 100 characters
//
// The character classes are tokenizers' own (training/text/
// BertUnicodeTables.inc, read off the library): Unicode 8.0's categories
// and Unicode 9.0's normalisation, so characters assigned since then are
// plain word characters there. utf8proc gives the decompositions, the
// combining classes and the lower case.
//
// Where the other BERT tokenizers differ: Google's tokenization.py
// lower-cases with Python's str.lower(), so a final capital sigma becomes ς
// (transformers' slow Python BertTokenizer lowers one character at a time,
// as here); both work on Python's Unicode tables (today's categories; Cn
// removed too by the slow one, Co kept by Google's) and space apart
// U+2B820-U+2B91F too; the slow one NFC-normalises the text first, which a
// cased vocabulary sees (e + U+0301 becomes é, jamo become syllables). Like
// tokenization.py, and unlike a BertWordPieceTokenizer with its special
// tokens added, a literal "[MASK]" in the text is punctuation and a word, not
// the special token.
#pragma once

#include "training/text/Vocab.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::text {

struct BasicTokenizer {
  bool lowerCase = true; // an uncased vocabulary: strip accents, lower-case

  // The words and punctuation of `text` (UTF-8). Throws data::DataError
  // naming the byte where the text stops being UTF-8.
  std::vector<std::string> tokenize(std::string_view text) const;
};

class WordPiece {
public:
  explicit WordPiece(const Vocab &vocab, int64_t maxWordChars = 100)
      : vocab_(vocab), maxWordChars_(maxWordChars) {}
  // Appends the ids of `word`'s pieces (one basic token) to `ids`.
  void pieces(const std::string &word, std::vector<int32_t> &ids) const;

private:
  const Vocab &vocab_;
  int64_t maxWordChars_;
};

// The basic tokenizer, then WordPiece.
class Tokenizer {
public:
  Tokenizer(const Vocab &vocab, bool lowerCase)
      : vocab_(vocab), basic_{lowerCase}, wordPiece_(vocab) {}
  std::vector<int32_t> encode(std::string_view text) const;
  const Vocab &vocab() const { return vocab_; }

private:
  const Vocab &vocab_;
  BasicTokenizer basic_;
  WordPiece wordPiece_;
};

} // namespace ferry::text
