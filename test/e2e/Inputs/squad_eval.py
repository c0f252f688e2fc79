#!/usr/bin/env python3
"""SQuAD v1.1 exact match and F1 with the official evaluate-v1.1.py's
semantics (normalise: lower, drop string.punctuation, drop the articles
a/an/the as whole words, collapse whitespace; F1 over token multisets; best
over gold answers; unanswered questions score 0), written for ferry's tests
on Python's own str/re/unicode behaviour.

  squad_eval.py DATASET.json PREDICTIONS.json   prints {"exact_match": .., "f1": ..}
"""
import collections
import json
import re
import string
import sys


def normalize(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def f1(prediction, truth):
    p, t = normalize(prediction).split(), normalize(truth).split()
    same = sum((collections.Counter(p) & collections.Counter(t)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(t)
    return 2 * precision * recall / (precision + recall)


def main():
    data = json.load(open(sys.argv[1], encoding="utf-8"))["data"]
    predictions = json.load(open(sys.argv[2], encoding="utf-8"))
    em = f = total = 0
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    continue
                truths = [a["text"] for a in qa["answers"]]
                pred = predictions[qa["id"]]
                em += max(float(normalize(pred) == normalize(t)) for t in truths)
                f += max(f1(pred, t) for t in truths)
    print(json.dumps({"exact_match": 100.0 * em / total, "f1": 100.0 * f / total}))


if __name__ == "__main__":
    main()
