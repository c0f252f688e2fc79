// BERT's basic tokenizer and WordPiece (Tokenizer.h), step for step as Hugging
// Face tokenizers' BertNormalizer, BertPreTokenizer and WordPiece do them.
#include "training/text/Tokenizer.h"

#include "training/text/Unicode.h"

#include "training/data/DataError.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <iterator>

namespace ferry::text {
namespace {

struct CodepointRange {
  int32_t first, last;
};

// kWhitespace, kControl, kPunctuation, kChinese, kNonspacingMark,
// kDecomposes, kNonstarter: tokenizers' character classes.
#include "training/text/BertUnicodeTables.inc"

template <size_t N> bool in(const CodepointRange (&table)[N], int32_t cp) {
  const CodepointRange *after = std::upper_bound(
      table, table + N, cp,
      [](int32_t c, const CodepointRange &r) { return c < r.first; });
  return after != table && cp <= std::prev(after)->last;
}

// tokenizers' NFD (unicode-normalization-alignments): each character's
// canonical decomposition, then each run of nonstarters stably sorted by
// combining class. The tables say which characters tokenizers decomposes and
// reorders (those of Unicode 9.0); utf8proc gives their decompositions and
// classes, which Unicode never changes once assigned.
Codepoints decomposed(const Codepoints &text) {
  Codepoints out;
  out.reserve(text.size());
  for (int32_t cp : text) {
    if (!in(kDecomposes, cp)) {
      out.push_back(cp);
      continue;
    }
    utf8proc_int32_t buffer[8]; // the longest canonical decomposition is 4
    int boundClass = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(
        cp, buffer, std::size(buffer), UTF8PROC_DECOMPOSE, &boundClass);
    if (n < 0 || n > static_cast<utf8proc_ssize_t>(std::size(buffer)))
      throw data::DataError(
          fmt::format("utf8proc cannot decompose U+{:04X}", cp));
    out.insert(out.end(), buffer, buffer + n);
  }
  auto combiningClass = [](int32_t cp) -> int {
    return in(kNonstarter, cp) ? utf8proc_get_property(cp)->combining_class : 0;
  };
  for (auto run = out.begin(); run != out.end();) {
    auto end = std::find_if(
        run, out.end(), [&](int32_t cp) { return combiningClass(cp) == 0; });
    std::stable_sort(run, end, [&](int32_t a, int32_t b) {
      return combiningClass(a) < combiningClass(b);
    });
    run = end == out.end() ? end : end + 1;
  }
  return out;
}

} // namespace

std::vector<std::string> BasicTokenizer::tokenize(std::string_view text) const {
  // BertNormalizer's clean_text (controls out, whitespace a space) and
  // handle_chinese_chars.
  Codepoints normal;
  for (int32_t cp : decodeUtf8(text)) {
    if (cp == 0 || cp == 0xFFFD || in(kControl, cp))
      continue;
    if (in(kWhitespace, cp)) {
      normal.push_back(' ');
    } else if (in(kChinese, cp)) {
      normal.push_back(' ');
      normal.push_back(cp);
      normal.push_back(' ');
    } else {
      normal.push_back(cp);
    }
  }
  // An uncased vocabulary: strip_accents (NFD, the Mn marks out), then
  // lowercase, one character at a time as Rust's char::to_lowercase does: no
  // final sigma. Its one mapping to more than one character, U+0130 to i and
  // U+0307, cannot arise: NFD has split U+0130 into I and a stripped mark.
  if (lowerCase) {
    Codepoints stripped;
    stripped.reserve(normal.size());
    for (int32_t cp : decomposed(normal))
      if (!in(kNonspacingMark, cp))
        stripped.push_back(utf8proc_tolower(cp));
    normal = std::move(stripped);
  }
  // BertPreTokenizer: split on whitespace; each punctuation character a token
  // of its own, the runs between them whole.
  std::vector<std::string> tokens;
  std::string word;
  auto endWord = [&] {
    if (!word.empty())
      tokens.push_back(std::move(word));
    word.clear();
  };
  for (int32_t cp : normal) {
    if (in(kWhitespace, cp)) {
      endWord();
    } else if (in(kPunctuation, cp)) {
      endWord();
      tokens.emplace_back();
      appendUtf8(tokens.back(), cp);
    } else {
      appendUtf8(word, cp);
    }
  }
  endWord();
  return tokens;
}

void WordPiece::pieces(const std::string &word,
                       std::vector<int32_t> &ids) const {
  // Byte offset of each character, and of the end.
  std::vector<size_t> at;
  const auto *p = reinterpret_cast<const utf8proc_uint8_t *>(word.data());
  utf8proc_ssize_t n = static_cast<utf8proc_ssize_t>(word.size()), pos = 0;
  while (pos < n) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t used = utf8proc_iterate(p + pos, n - pos, &cp);
    if (used <= 0)
      throw data::DataError("WordPiece: a token that is not UTF-8");
    at.push_back(static_cast<size_t>(pos));
    pos += used;
  }
  size_t chars = at.size();
  at.push_back(word.size());
  // Over the limit in code points (tokenizers counts Rust chars): [UNK].
  if (static_cast<int64_t>(chars) > maxWordChars_) {
    ids.push_back(vocab_.unk());
    return;
  }
  size_t first = ids.size(), start = 0;
  std::string key;
  while (start < chars) {
    int32_t found = -1;
    size_t end = chars;
    for (; end > start; --end) {
      key.assign(start > 0 ? "##" : "");
      key.append(word, at[start], at[end] - at[start]);
      found = vocab_.find(key);
      if (found >= 0)
        break;
    }
    if (found < 0) { // no piece matches here: the whole word is unknown
      ids.resize(first);
      ids.push_back(vocab_.unk());
      return;
    }
    ids.push_back(found);
    start = end;
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (const std::string &word : basic_.tokenize(text))
    wordPiece_.pieces(word, ids);
  return ids;
}

} // namespace ferry::text
