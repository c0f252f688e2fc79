// Python's Unicode operations on utf8proc's tables (Unicode.h).
#include "training/text/Unicode.h"

#include "training/data/DataError.h"

#include <fmt/format.h>
#include <utf8proc.h>

namespace ferry::text {
namespace {

utf8proc_category_t category(int32_t cp) { return utf8proc_category(cp); }

bool isCased(int32_t cp) {
  utf8proc_category_t c = category(cp);
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL ||
         c == UTF8PROC_CATEGORY_LT || utf8proc_tolower(cp) != cp ||
         utf8proc_toupper(cp) != cp;
}

// Approximates Unicode's Case_Ignorable (Python's final-sigma rule skips
// these): Mn, Me, Cf, Lm, Sk and word-break MidLetter, MidNumLet and
// Single_Quote characters.
bool isCaseIgnorable(int32_t cp) {
  switch (category(cp)) {
  case UTF8PROC_CATEGORY_MN:
  case UTF8PROC_CATEGORY_ME:
  case UTF8PROC_CATEGORY_CF:
  case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_SK:
    return true;
  default:
    break;
  }
  switch (cp) {
  case 0x27:
  case 0x2E:
  case 0x3A:
  case 0xB7:
  case 0x387:
  case 0x55F:
  case 0x5F4:
  case 0x2018:
  case 0x2019:
  case 0x2024:
  case 0x2027:
  case 0xFE13:
  case 0xFE52:
  case 0xFE55:
  case 0xFF07:
  case 0xFF0E:
  case 0xFF1A:
    return true;
  default:
    return false;
  }
}

} // namespace

Codepoints decodeUtf8(std::string_view text) {
  Codepoints out;
  out.reserve(text.size());
  const auto *p = reinterpret_cast<const utf8proc_uint8_t *>(text.data());
  utf8proc_ssize_t n = static_cast<utf8proc_ssize_t>(text.size()), at = 0;
  while (at < n) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t used = utf8proc_iterate(p + at, n - at, &cp);
    if (used <= 0 || cp < 0)
      throw data::DataError(fmt::format(
          "the text is not UTF-8 at byte {}; convert it to UTF-8 (iconv -t "
          "UTF-8)",
          at + 1));
    out.push_back(cp);
    at += used;
  }
  return out;
}

void appendUtf8(std::string &out, int32_t cp) {
  utf8proc_uint8_t buf[4];
  utf8proc_ssize_t n = utf8proc_encode_char(cp, buf);
  out.append(reinterpret_cast<const char *>(buf), static_cast<size_t>(n));
}

std::string encodeUtf8(const Codepoints &cps) {
  std::string out;
  out.reserve(cps.size());
  for (int32_t cp : cps)
    appendUtf8(out, cp);
  return out;
}

bool isPythonSpace(int32_t cp) {
  if (cp < 128)
    return cp == ' ' || (cp >= 9 && cp <= 13) || (cp >= 28 && cp <= 31);
  if (category(cp) == UTF8PROC_CATEGORY_ZS)
    return true;
  utf8proc_propval_t bidi = utf8proc_get_property(cp)->bidi_class;
  return bidi == UTF8PROC_BIDI_CLASS_WS || bidi == UTF8PROC_BIDI_CLASS_B ||
         bidi == UTF8PROC_BIDI_CLASS_S;
}

bool isPythonWordChar(int32_t cp) {
  if (cp == '_')
    return true;
  utf8proc_category_t c = category(cp);
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
         (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

void pythonLower(Codepoints &word) {
  Codepoints original = word;
  int64_t n = static_cast<int64_t>(word.size());
  for (int64_t i = 0; i < n; ++i) {
    if (original[i] != 0x3A3) {
      word[i] = utf8proc_tolower(original[i]);
      continue;
    }
    int64_t before = i - 1, after = i + 1;
    while (before >= 0 && isCaseIgnorable(original[before]))
      --before;
    while (after < n && isCaseIgnorable(original[after]))
      ++after;
    bool final = before >= 0 && isCased(original[before]) &&
                 !(after < n && isCased(original[after]));
    word[i] = final ? 0x3C2 : 0x3C3;
  }
}

bool isAsciiPunctuation(int32_t cp) {
  return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) ||
         (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
}

std::vector<Codepoints> pythonSplit(const Codepoints &text) {
  std::vector<Codepoints> words(1);
  for (int32_t cp : text) {
    if (!isPythonSpace(cp))
      words.back().push_back(cp);
    else if (!words.back().empty())
      words.emplace_back();
  }
  if (words.back().empty())
    words.pop_back();
  return words;
}

std::string pythonCollapse(const Codepoints &text) {
  std::string out;
  for (const Codepoints &word : pythonSplit(text)) {
    if (!out.empty())
      out += ' ';
    out += encodeUtf8(word);
  }
  return out;
}

} // namespace ferry::text
