// BERT's basic tokenizer and WordPiece (Tokenizer.h).
#include "runtime/text/Tokenizer.h"

#include "runtime/text/Unicode.h"

#include "runtime/data/DataError.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace ferry::text {
namespace {

utf8proc_category_t category(int32_t cp) { return utf8proc_category(cp); }

// The reference tokenizers' _is_whitespace: the four ASCII ones and Zs.
bool isWhitespace(int32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' ||
         category(cp) == UTF8PROC_CATEGORY_ZS;
}

// _is_control: every C category but the three whitespace controls
// (unassigned code points are Cn, so they go too).
bool isControl(int32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r')
    return false;
  switch (category(cp)) {
  case UTF8PROC_CATEGORY_CC:
  case UTF8PROC_CATEGORY_CF:
  case UTF8PROC_CATEGORY_CS:
  case UTF8PROC_CATEGORY_CO:
  case UTF8PROC_CATEGORY_CN:
    return true;
  default:
    return false;
  }
}

// _is_punctuation: ASCII's non-alphanumeric printables (so "$", "^", "`"
// split too) and every P category.
bool isPunctuation(int32_t cp) {
  if (isAsciiPunctuation(cp))
    return true;
  utf8proc_category_t c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

// The CJK Unified Ideographs blocks the reference tokenizers split out
// (not Hangul, Hiragana or Katakana, which are written with spaces or
// tokenized as words).
bool isCjk(int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// NFD, then without the nonspacing marks (category Mn).
Codepoints stripAccents(const Codepoints &word) {
  std::string utf8 = encodeUtf8(word);
  std::vector<utf8proc_int32_t> buffer(word.size() * 4 + 4);
  utf8proc_option_t options =
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
  for (;;) {
    utf8proc_ssize_t n = utf8proc_decompose(
        reinterpret_cast<const utf8proc_uint8_t *>(utf8.data()),
        static_cast<utf8proc_ssize_t>(utf8.size()), buffer.data(),
        static_cast<utf8proc_ssize_t>(buffer.size()), options);
    if (n < 0)
      throw data::DataError(std::string("text normalisation failed: ") +
                            utf8proc_errmsg(n));
    if (static_cast<size_t>(n) > buffer.size()) {
      buffer.resize(static_cast<size_t>(n));
      continue;
    }
    Codepoints out;
    out.reserve(static_cast<size_t>(n));
    for (utf8proc_ssize_t i = 0; i < n; ++i)
      if (category(buffer[i]) != UTF8PROC_CATEGORY_MN)
        out.push_back(buffer[i]);
    return out;
  }
}

// NFC (Hugging Face normalises before splitting on whitespace).
Codepoints composed(const Codepoints &text) {
  std::string utf8 = encodeUtf8(text);
  utf8proc_uint8_t *out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t *>(utf8.data()),
      static_cast<utf8proc_ssize_t>(utf8.size()), &out,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0)
    throw data::DataError(std::string("text normalisation failed: ") +
                          utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out,
                                                                &std::free);
  return decodeUtf8(std::string_view(reinterpret_cast<const char *>(out),
                                     static_cast<size_t>(n)));
}

} // namespace

std::vector<std::string> BasicTokenizer::tokenize(std::string_view text) const {
  Codepoints cleaned;
  for (int32_t cp : decodeUtf8(text)) {
    if (cp == 0 || cp == 0xFFFD || isControl(cp))
      continue;
    if (isWhitespace(cp)) {
      cleaned.push_back(' ');
    } else if (isCjk(cp)) {
      cleaned.push_back(' ');
      cleaned.push_back(cp);
      cleaned.push_back(' ');
    } else {
      cleaned.push_back(cp);
    }
  }
  Codepoints normal = composed(cleaned);
  std::vector<std::string> tokens;
  auto emitWord = [&](Codepoints word) {
    if (lowerCase) {
      pythonLower(word);
      word = stripAccents(word);
    }
    // Each punctuation character on its own; the runs between them whole.
    Codepoints run;
    for (int32_t cp : word) {
      if (isPunctuation(cp)) {
        if (!run.empty())
          tokens.push_back(encodeUtf8(run));
        run.clear();
        tokens.push_back(encodeUtf8(Codepoints{cp}));
      } else {
        run.push_back(cp);
      }
    }
    if (!run.empty())
      tokens.push_back(encodeUtf8(run));
  };
  for (Codepoints &word : pythonSplit(normal))
    emitWord(std::move(word));
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
