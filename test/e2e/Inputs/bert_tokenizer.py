#!/usr/bin/env python3
"""A reference BERT tokenizer for ferry's tests, written from the published
algorithm (Google's tokenization.py, Hugging Face's BertTokenizer) on
Python's own Unicode tables: str.lower(), str.split(), unicodedata's
categories and normalisation. ferry's tokenizer (runtime/text, utf8proc)
must give the same tokens.

  bert_tokenizer.py tokens VOCAB [--cased] < lines     WordPiece tokens per line
  bert_tokenizer.py vocab OUT FILE...                  a small vocabulary from text
"""
import collections
import sys
import unicodedata

CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
       (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
       (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]


def is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def basic_tokens(text, lower_case):
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or is_control(ch):
            continue
        if is_whitespace(ch):
            cleaned.append(" ")
        elif any(lo <= cp <= hi for lo, hi in CJK):
            cleaned.append(" " + ch + " ")
        else:
            cleaned.append(ch)
    text = unicodedata.normalize("NFC", "".join(cleaned))
    out = []
    for word in text.split():
        if lower_case:
            word = word.lower()
            word = "".join(c for c in unicodedata.normalize("NFD", word)
                           if unicodedata.category(c) != "Mn")
        run = ""
        for ch in word:
            if is_punctuation(ch):
                if run:
                    out.append(run)
                run = ""
                out.append(ch)
            else:
                run += ch
        if run:
            out.append(run)
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
