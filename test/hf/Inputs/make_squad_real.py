#!/usr/bin/env python3
"""Writes squad-real-v1.1.json, a small SQuAD v1.1-format file from real text:
paragraphs of the licence texts Debian ships (/usr/share/common-licenses),
each line stripped and the lines joined by one space (the text's own double
spaces after a full stop stay), and questions whose answers are exact
substrings of their context. answer_start is computed here (the answer's
`nth` occurrence, in code points) and checked again on the written file.

    python3 make_squad_real.py > squad-real-v1.1.json      # regenerate
    python3 make_squad_real.py --check squad-real-v1.1.json # verify offsets

The test reads the committed JSON; this script is its provenance."""
import json
import sys

LICENSES = "/usr/share/common-licenses/"


def paragraph(name, first, last):
    """Lines first..last (1-based, inclusive) of a licence, joined."""
    lines = open(LICENSES + name, encoding="utf-8").read().split("\n")
    return " ".join(line.strip() for line in lines[first - 1:last] if line.strip())


# (title, licence file, first line, last line, [(id, question, answer, nth)])
ARTICLES = [
    ("GPL-3 preamble", "GPL-3", 10, 38, [
        ("gpl-kind", "What kind of license is the GNU General Public License?",
         "a free, copyleft license", 0),
        ("gpl-fsf", "Who uses the GNU General Public License for most of its software?",
         "the Free Software Foundation", 0),
        ("gpl-price", "What are we referring to when we speak of free software?",
         "freedom, not price", 0),
        ("gpl-charge", "What may you do if you wish when you distribute copies of free software?",
         "charge for them", 0),
        ("gpl-others", "What must your responsibilities respect?",
         "the freedom of others", 0),
        ("gpl-pass", "What must you pass on to the recipients of copies of such a program?",
         "the same freedoms that you received", 0),
        ("gpl-show", "What must you show the recipients so that they know their rights?",
         "these terms", 0),
        ("gpl-gratis", "How may copies of such a program be distributed besides for a fee?",
         "gratis", 0),
    ]),
    ("Apache-2.0 section 2", "Apache-2.0", 67, 72, [
        ("apache-who", "Who grants You the copyright license?",
         "each Contributor", 0),
        ("apache-duration", "For how long is the copyright license granted?",
         "perpetual", 0),
        ("apache-prepare", "What may You prepare of the Work?",
         "Derivative Works", 0),
        ("apache-form", "In which forms may the Work be distributed?",
         "Source or Object form", 0),
    ]),
    ("BSD licence", "BSD", 1, 19, [
        ("bsd-holder", "Who holds the copyright?",
         "The Regents of the University of California", 0),
        ("bsd-retain", "What must redistributions of source code retain?",
         "the above copyright notice, this list of conditions and the following disclaimer", 0),
        ("bsd-binary", "Where must redistributions in binary form reproduce the notice?",
         "in the documentation and/or other materials provided with the distribution", 0),
        ("bsd-warranties", "Which implied warranties are disclaimed?",
         "MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE", 0),
    ]),
    ("MPL-2.0 section 3.1", "MPL-2.0", 162, 168, [
        ("mpl-terms", "Under what terms must Covered Software in Source Code Form be distributed?",
         "the terms of this License", 0),
        ("mpl-inform", "What must You inform recipients of besides how to obtain a copy of the License?",
         "that the Source Code Form of the Covered Software is governed by the terms of this License", 0),
        ("mpl-restrict", "What may You not attempt to alter or restrict?",
         "the recipients' rights in the Source Code Form", 0),
    ]),
    ("Artistic licence preamble", "Artistic", 9, 14, [
        ("artistic-intent", "What is the intent of this document?",
         "to state the conditions under which a Package may be copied", 0),
        ("artistic-control", "What does the Copyright Holder maintain over the development of the package?",
         "some semblance of artistic control", 0),
        ("artistic-fashion", "In what fashion may users use and distribute the Package?",
         "a more-or-less customary fashion", 0),
        ("artistic-modify", "Which further right do the users of the package have?",
         "the right to make reasonable modifications", 0),
    ]),
]


def build():
    data = []
    for title, name, first, last, questions in ARTICLES:
        context = paragraph(name, first, last)
        qas = []
        for qid, question, answer, nth in questions:
            at = -1
            for _ in range(nth + 1):
                at = context.find(answer, at + 1)
                if at < 0:
                    sys.exit(f"{qid}: {answer!r} ({nth}th) is not in {title}")
            qas.append({"id": qid, "question": question,
                        "answers": [{"answer_start": at, "text": answer}]})
        data.append({"title": title, "paragraphs": [{"context": context, "qas": qas}]})
    return {"version": "1.1", "data": data}


def check(path):
    """Every answer exactly at its answer_start; ids unique."""
    root = json.load(open(path, encoding="utf-8"))
    ids, count = set(), 0
    for article in root["data"]:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                assert qa["id"] not in ids, f"duplicate id {qa['id']}"
                ids.add(qa["id"])
                for a in qa["answers"]:
                    s, t = a["answer_start"], a["text"]
                    if p["context"][s:s + len(t)] != t:
                        sys.exit(f"{qa['id']}: {t!r} is not at {s}: "
                                 f"{p['context'][s:s + len(t)]!r}")
                    count += 1
    print(f"{path}: {len(ids)} questions, {count} answers, every answer_start checked")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        json.dump(build(), sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
