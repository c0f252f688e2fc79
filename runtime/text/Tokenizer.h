// BERT's tokenizer, as Google's `tokenization.py` and Hugging Face's
// `BertTokenizer` define it: a basic tokenizer (clean, split CJK
// characters, split on whitespace, lower-case and strip accents for an
// uncased vocabulary, split punctuation) and then WordPiece (greedy longest
// match first, "##" on the pieces after the first, [UNK] for a word with
// no match or over 100 characters). Unicode categories, case mapping and
// normalisation come from utf8proc.
//
// Where the two reference tokenizers differ, this follows Hugging Face: the
// text is NFC-normalised before the whitespace split (only cased
// vocabularies can tell), and every character of a C category is dropped
// (Google drops Cc and Cf only, so private-use and unassigned code points
// become [UNK] there). Like Google's, it has no special tokens in the text:
// a literal "[MASK]" is split as punctuation and a word. Python's `str.lower()`
// is matched including the final-sigma rule; its "case-ignorable" set is
// approximated by the categories Mn, Me, Cf, Lm, Sk and the apostrophes,
// periods and colons of Unicode's word-break classes.
#pragma once

#include "runtime/text/Vocab.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::text {

struct BasicTokenizer {
  bool lowerCase = true; // an uncased vocabulary: lower-case, strip accents

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
