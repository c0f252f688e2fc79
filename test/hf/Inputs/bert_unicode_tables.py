#!/usr/bin/env python3
"""Writes training/text/BertUnicodeTables.inc: the character classes of Hugging
Face tokenizers' BERT normalizer and pre-tokenizer, read off tokenizers itself
by running each step over every code point.

tokenizers' classes are not the Unicode of the day: its categories come from
the unicode_categories crate (Unicode 8.0) and its NFD from
unicode-normalization-alignments (Unicode 9.0), so characters assigned since
are neither punctuation, marks nor controls there, and NFD neither decomposes
nor reorders them. ferry takes these tables for the categories and for which
characters NFD touches (utf8proc gives the decompositions and combining
classes, which Unicode never changes once assigned).

  bert_unicode_tables.py > training/text/BertUnicodeTables.inc   (the venv python)
"""
import sys
import textwrap

import tokenizers
from tokenizers import normalizers, pre_tokenizers

CODEPOINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def each(step, before, after, skip):
    """{c: step(before + c + after)} for every code point c but `skip`, the
    separator that `before` starts with, which must come out of `step`
    unchanged and appear nowhere else: the code points are joined, a few
    thousand a call (tokenizers is slow on one long string)."""
    out, separator = {}, ord(skip)
    for chunk in chunks([c for c in CODEPOINTS if c != separator]):
        text = before + (after + before).join(map(chr, chunk)) + after
        got = step(text).split(skip)
        assert got[0] == "" and len(got) == len(chunk) + 1, "separator changed"
        out.update(zip(chunk, got[1:]))
    return out


def chunks(cps, size=4096):
    return (cps[i:i + size] for i in range(0, len(cps), size))


def bert_normalizer(**step):
    """BertNormalizer with only `step` on."""
    options = dict(clean_text=False, handle_chinese_chars=False,
                   strip_accents=False, lowercase=False)
    options.update(step)
    return normalizers.BertNormalizer(**options).normalize_str


def pre_tokenizer_classes():
    """(whitespace, punctuation): what BertPreTokenizer removes and what it
    isolates, each code point between two "a"s."""
    whitespace, punctuation = [], []
    pre = pre_tokenizers.BertPreTokenizer()
    for chunk in chunks([c for c in CODEPOINTS if c != ord("a")]):
        at = 0
        for _, (start, end) in pre.pre_tokenize_str("a" + "a".join(map(chr, chunk)) + "a"):
            whitespace += [chunk[i // 2] for i in range(at, start) if i % 2]
            if end == start + 1 and start % 2:
                punctuation.append(chunk[start // 2])
            at = end
    return whitespace, punctuation


def tables():
    """(name, what it holds, code points) of each table."""
    clean = each(bert_normalizer(clean_text=True), "a", "", "a")
    chinese = each(bert_normalizer(handle_chinese_chars=True), "\x01", "", "\x01")
    strip = each(bert_normalizer(strip_accents=True), "\x01", "", "\x01")
    nfd = normalizers.NFD().normalize_str
    decomposed = each(nfd, "\x01", "", "\x01")
    # NFD's reordering moves a character of combining class above 0 past
    # U+0334 (class 1) if its class is above 1, behind U+0345 (class 240) if
    # below 240.
    high = each(nfd, "\x01a", "\u0334", "\x01")
    low = each(nfd, "\x01a\u0345", "", "\x01")
    whitespace, punctuation = pre_tokenizer_classes()
    yield ("kWhitespace",
           "Split on: Rust's char::is_whitespace (the White_Space property), "
           "which clean_text also maps to a space.", whitespace)
    yield ("kControl",
           "Removed by clean_text, as NUL and U+FFFD are: categories Cc, Cf "
           "and Co (not Cn), but tab, newline and carriage return.",
           [c for c, s in clean.items() if s == "" and c != 0xFFFD])
    yield ("kPunctuation",
           "Split off, each a token: ASCII punctuation and the P categories.",
           punctuation)
    yield ("kChinese",
           "Spaced apart by handle_chinese_chars: the CJK ideograph blocks "
           "(tokenizers' Extension E range starts at U+2B920, Google's at "
           "U+2B820).", [c for c, s in chinese.items() if s == f" {chr(c)} "])
    yield ("kNonspacingMark",
           "Removed by strip_accents after NFD: category Mn.",
           [c for c, s in strip.items() if s == ""])
    yield ("kDecomposes",
           "Replaced by NFD: a canonical decomposition (Hangul syllables "
           "too).", [c for c, s in decomposed.items() if s != chr(c)])
    yield ("kNonstarter",
           "Reordered by NFD: combining class above 0 (of the characters NFD "
           "keeps).",
           [c for c, s in decomposed.items() if s == chr(c) and
            (high[c] != "a" + s + "\u0334" or low[c] != "a\u0345" + s)])


def ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def comment(text):
    return "".join(f"// {line}\n" for line in textwrap.wrap(text, 77))


def main():
    w = sys.stdout.write
    w(comment(f"Generated by test/hf/Inputs/bert_unicode_tables.py from "
              f"tokenizers {tokenizers.__version__}: do not edit. The "
              f"character classes of Hugging Face tokenizers' BERT normalizer "
              f"and pre-tokenizer (Unicode 8.0 categories, Unicode 9.0 "
              f"normalisation), as sorted, inclusive code point ranges."))
    w("\n// clang-format off\n")
    for name, what, cps in tables():
        rs = ranges(cps)
        w("\n" + comment(f"{what} {len(cps)} code points."))
        w(f"static constexpr CodepointRange {name}[] = {{\n")
        for i in range(0, len(rs), 4):
            w("   " + "".join(f" {{0x{a:04X}, 0x{b:04X}}}," for a, b in rs[i:i + 4]) + "\n")
        w("};\n")
    w("// clang-format on\n")


if __name__ == "__main__":
    main()
