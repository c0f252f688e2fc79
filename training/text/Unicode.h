// The Unicode operations ferry's text code needs, with Python's meaning
// (create_pretraining_data.py and the SQuAD evaluation script are Python;
// the tokenizer follows Hugging Face's Rust tokenizers instead, Tokenizer.h):
// UTF-8 to code points and back, str.lower() (with the final-sigma rule),
// str.isspace() (what str.split() splits on), and re's \w. Categories and
// case mappings come from utf8proc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::text {

using Codepoints = std::vector<int32_t>;

// Throws data::DataError naming the byte (1-based) where `text` stops
// being UTF-8.
Codepoints decodeUtf8(std::string_view text);
std::string encodeUtf8(const Codepoints &cps);
void appendUtf8(std::string &out, int32_t cp);

// Python's str.lower(): simple lowercase mappings (its one unconditional
// multi-character mapping, U+0130, differs only by a combining dot), and
// capital sigma as final sigma at the end of a word. Python's
// "case-ignorable" set is approximated by the categories Mn, Me, Cf, Lm, Sk
// and the apostrophes, periods and colons of Unicode's word-break classes.
void pythonLower(Codepoints &text);

// Python's str.isspace(): bidirectional class WS, B or S, or category Zs.
bool isPythonSpace(int32_t cp);

// A character of Python's re \w: letters (L*), numbers (N*) and '_'.
bool isPythonWordChar(int32_t cp);

// Python's string.punctuation: ASCII's printable non-alphanumerics.
bool isAsciiPunctuation(int32_t cp);

// Python's str.split(): the runs between isPythonSpace characters.
std::vector<Codepoints> pythonSplit(const Codepoints &text);
// Python's " ".join(text.split()), as UTF-8.
std::string pythonCollapse(const Codepoints &text);

} // namespace ferry::text
