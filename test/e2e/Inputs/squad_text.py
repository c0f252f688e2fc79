#!/usr/bin/env python3
"""Prints the contexts and questions of a SQuAD JSON file, one a line: text
to build a test vocabulary from (bert_tokenizer.py vocab).

  squad_text.py FILE.json
"""
import json
import sys

for article in json.load(open(sys.argv[1], encoding="utf-8"))["data"]:
    for paragraph in article["paragraphs"]:
        print(paragraph["context"])
        for qa in paragraph["qas"]:
            print(qa["question"])
