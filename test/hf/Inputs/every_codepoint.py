#!/usr/bin/env python3
"""Unicode scalar values in the contexts BERT's basic tokenizer treats
differently, 64 code points a line, and a vocabulary that holds each of them
alone and as "##c", so WordPiece spells out every basic token character by
character and a difference in the basic tokens cannot hide behind an [UNK].

  every_codepoint.py VOCAB_OUT [--all] > lines

Without --all, the code points where tokenizers' classes change (a few
seconds through tokenizers, not a minute): all but the other letters (Lo:
ideographs, syllables), the unassigned and the private use, whose runs are
sampled (their first and last, every 97th, the first and last of every 256)
but for the characters with a canonical decomposition, and all of
U+2B800-U+2B93F, where tokenizers' CJK ranges leave Google's. Categories and
decompositions as Python's unicodedata has them: a selection only.
"""
import sys
import unicodedata

SAMPLED = ("Lo", "Cn", "Co")


def selection():
    cat = [unicodedata.category(chr(c)) for c in range(0x110000)]

    def decomposes(c):  # by the table (Hangul syllables by rule: sampled)
        mapping = unicodedata.decomposition(chr(c))
        return mapping != "" and not mapping.startswith("<")

    return [c for c in range(0x110000)
            if cat[c] not in SAMPLED or decomposes(c)
            or cat[c] != cat[max(c - 1, 0)] or cat[c] != cat[min(c + 1, 0x10FFFF)]
            or c % 97 == 0 or c % 256 in (0, 255) or 0x2B800 <= c <= 0x2B93F]


def main():
    cps = [c for c in (range(0x110000) if "--all" in sys.argv[2:] else selection())
           if not 0xD800 <= c <= 0xDFFF and c not in (0x0A, 0x0D)]
    with open(sys.argv[1], "w", encoding="utf-8", newline="\n") as vocab:
        vocab.write("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
        # Not the characters a vocabulary line cannot end with (tokenizers
        # trims trailing whitespace): they are never in a word anyway.
        vocab.write("".join(f"{chr(c)}\n##{chr(c)}\n" for c in cps
                            if not chr(c).isspace()))
    out = []
    for i in range(0, len(cps), 64):
        out.append(" ".join(f"a{ch}b A{ch} a{ch}\u0334 a\u0345{ch}"
                            for ch in map(chr, cps[i:i + 64])))
    sys.stdout.buffer.write("".join(line + "\n" for line in out).encode("utf-8"))


if __name__ == "__main__":
    main()
