#!/usr/bin/env python3
"""Hugging Face tokenizers' BERT WordPiece tokens of each line of standard
input, without special tokens, a line of space-separated tokens for each (an
empty one for a line without tokens), as `ferry tokenize --tokens` prints
them: the golden outputs of test/hf/tokenizer*.test.

  hf_tokens.py VOCAB [--cased] < lines
  hf_tokens.py --add-characters VOCAB TEXT... > vocab

The pipeline is BertWordPieceTokenizer's, from its parts: BertNormalizer
(clean_text, handle_chinese_chars; uncased: strip_accents and lowercase;
--cased: neither), BertPreTokenizer, WordPiece (unk [UNK], at most 100
characters a word). Unlike BertWordPieceTokenizer, it adds no special tokens
to match in the text, so a literal "[MASK]" is tokenized as text, as ferry
(and Google's tokenization.py) does.

--add-characters writes VOCAB with every character of the TEXTs it lacks
(and of their lower case and NFD) added, alone and as "##c", so that no word
is [UNK] for a character it lacks and a difference in the basic tokens cannot
hide behind one.
"""
import sys
import unicodedata

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers


def tokens(vocab, cased):
    tokenizer = Tokenizer(models.WordPiece.from_file(
        vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True,
        strip_accents=not cased, lowercase=not cased)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # Lines as `ferry tokenize` reads them: split at "\n" only.
    lines = sys.stdin.buffer.read().decode("utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()
    out = tokenizer.encode_batch(lines, add_special_tokens=False)
    sys.stdout.buffer.write("".join(" ".join(e.tokens) + "\n" for e in out).encode("utf-8"))


def add_characters(vocab, texts):
    pieces = open(vocab, encoding="utf-8").read().splitlines()
    chars = set()
    for path in texts:
        text = open(path, encoding="utf-8", newline="").read()
        # And what an uncased vocabulary's normalisation makes of them.
        chars.update(text, unicodedata.normalize("NFD", text.lower()))
    have = set(pieces)
    # Not whitespace: a vocabulary line cannot hold it, and no word does.
    for c in sorted(c for c in chars if not c.isspace()):
        pieces += [p for p in (c, "##" + c) if p not in have]
    sys.stdout.buffer.write("".join(p + "\n" for p in pieces).encode("utf-8"))


def main():
    if sys.argv[1] == "--add-characters":
        add_characters(sys.argv[2], sys.argv[3:])
    else:
        tokens(sys.argv[1], "--cased" in sys.argv[2:])


if __name__ == "__main__":
    main()
