#!/usr/bin/env python3
"""A reference BERT tokenizer for ferry's tests, written from Hugging Face
tokenizers' BertWordPieceTokenizer (BertNormalizer, BertPreTokenizer,
WordPiece) without it, for machines without PyPI: tokenizers' character
classes from training/text/BertUnicodeTables.inc (read off tokenizers, Unicode
8.0 categories and 9.0 normalisation), Python's unicodedata for
decompositions and combining classes and str.lower() one character at a time
for the lower case. ferry's tokenizer (training/text, utf8proc) must give the
same tokens; test/hf/ checks both against tokenizers itself.

  bert_tokenizer.py tokens VOCAB [--cased] < lines     WordPiece tokens per line
  bert_tokenizer.py vocab OUT FILE...                  a small vocabulary from text
"""
import bisect
import collections
import os
import re
import sys
import unicodedata

TABLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                      "training", "text", "BertUnicodeTables.inc")


def read_tables(path):
    """{name: (firsts, lasts)} of the .inc's `static constexpr
    CodepointRange kName[] = {{0xFIRST, 0xLAST}, ...};` tables."""
    tables = {}
    for name, body in re.findall(r"CodepointRange (k\w+)\[\] = \{(.*?)\};",
                                 open(path, encoding="utf-8").read(), re.S):
        pairs = [(int(a, 16), int(b, 16))
                 for a, b in re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+)\}", body)]
        tables[name] = ([a for a, _ in pairs], [b for _, b in pairs])
    return tables


CLASSES = read_tables(TABLES)


def is_in(name, ch):
    firsts, lasts = CLASSES[name]
    i = bisect.bisect_right(firsts, ord(ch)) - 1
    return i >= 0 and ord(ch) <= lasts[i]


def nfd(text):
    """tokenizers' NFD: decompose and reorder only what Unicode 9.0 did."""
    out = []
    for ch in text:
        out += unicodedata.normalize("NFD", ch) if is_in("kDecomposes", ch) else ch
    cls = [unicodedata.combining(c) if is_in("kNonstarter", c) else 0 for c in out]
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and cls[j]:
            j += 1
        if j > i:  # a run of nonstarters, stably sorted by class
            run = sorted(range(i, j), key=lambda k: cls[k])
            out[i:j] = [out[k] for k in run]
        i = j + 1
    return "".join(out)


def basic_tokens(text, lower_case):
    # BertNormalizer: clean_text, handle_chinese_chars; uncased, strip_accents
    # (NFD, Mn out) then lowercase one character at a time (no final sigma).
    cleaned = []
    for ch in text:
        if ch in "\0\ufffd" or is_in("kControl", ch):
            continue
        if is_in("kWhitespace", ch):
            cleaned.append(" ")
        elif is_in("kChinese", ch):
            cleaned.append(" " + ch + " ")
        else:
            cleaned.append(ch)
    text = "".join(cleaned)
    if lower_case:
        text = "".join(c.lower() for c in nfd(text) if not is_in("kNonspacingMark", c))
    # BertPreTokenizer: split on whitespace, each punctuation character alone.
    out, word = [], ""
    for ch in text:
        if is_in("kWhitespace", ch) or is_in("kPunctuation", ch):
            if word:
                out.append(word)
            word = ""
            if is_in("kPunctuation", ch):
                out.append(ch)
        else:
            word += ch
    if word:
        out.append(word)
    return out


def word_pieces(word, vocab):
    if len(word) > 100:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = ("##" if start > 0 else "") + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


def main():
    if sys.argv[1] == "tokens":
        vocab = set(open(sys.argv[2], encoding="utf-8").read().split("\n"))
        lower_case = "--cased" not in sys.argv
        for line in sys.stdin.buffer.read().decode("utf-8").split("\n")[:-1]:
            print(" ".join(p for w in basic_tokens(line, lower_case)
                           for p in word_pieces(w, vocab)))
    elif sys.argv[1] == "vocab":
        words = collections.Counter()
        chars = set()
        for path in sys.argv[3:]:
            for line in open(path, encoding="utf-8"):
                for w in basic_tokens(line, True):
                    words[w] += 1
                    chars.update(w)
                for w in basic_tokens(line, False):  # cased text's letters
                    chars.update(w)
        tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(5)]
        tokens += ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        for c in sorted(chars):
            tokens += [c, "##" + c]
        suffixes = collections.Counter()
        for w, n in words.items():
            for k in (2, 3, 4):
                if len(w) > k + 2:
                    suffixes["##" + w[-k:]] += n
        tokens += [w for w, _ in words.most_common(700) if w not in tokens]
        tokens += [s for s, _ in suffixes.most_common(150) if s not in tokens]
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in tokens))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
