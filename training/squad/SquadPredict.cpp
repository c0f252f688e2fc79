// SQuAD answers from the span head's logits (SquadPredict.h).
#include "training/squad/SquadPredict.h"

#include "runtime/AtomicFile.h"
#include "training/data/DataError.h"
#include "training/text/Unicode.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace ferry::squad {
namespace {

using text::Codepoints;

// The indices of the n largest logits, largest first (ties: lower index).
std::vector<int64_t> best(const std::vector<float> &logits, int64_t n) {
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  // Python's stable sort: ties keep the lower index first.
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  if (static_cast<int64_t>(order.size()) > n)
    order.resize(static_cast<size_t>(n));
  return order;
}

// Without the spaces, and each kept character's index in `text`.
Codepoints withoutSpaces(const Codepoints &text, std::vector<int64_t> &at) {
  Codepoints out;
  at.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ' ')
      continue;
    at.push_back(static_cast<int64_t>(i));
    out.push_back(text[i]);
  }
  return out;
}

} // namespace

std::string finalText(const std::string &predicted, const std::string &original,
                      bool lowerCase) {
  Codepoints pred = text::decodeUtf8(predicted);
  Codepoints orig = text::decodeUtf8(original);
  Codepoints tok;
  for (const std::string &t :
       text::BasicTokenizer{lowerCase}.tokenize(original)) {
    if (!tok.empty())
      tok.push_back(' ');
    Codepoints c = text::decodeUtf8(t);
    tok.insert(tok.end(), c.begin(), c.end());
  }
  auto found = std::search(tok.begin(), tok.end(), pred.begin(), pred.end());
  if (pred.empty() || found == tok.end())
    return original;
  int64_t start = found - tok.begin();
  int64_t end = start + static_cast<int64_t>(pred.size()) - 1;
  std::vector<int64_t> origAt, tokAt;
  Codepoints origNs = withoutSpaces(orig, origAt);
  Codepoints tokNs = withoutSpaces(tok, tokAt);
  if (origNs.size() != tokNs.size())
    return original; // the tokenizer changed more than spaces
  // tok index -> no-space index -> orig index.
  auto toOrig = [&](int64_t tokIndex) -> int64_t {
    auto it = std::lower_bound(tokAt.begin(), tokAt.end(), tokIndex);
    if (it == tokAt.end() || *it != tokIndex)
      return -1;
    return origAt[static_cast<size_t>(it - tokAt.begin())];
  };
  int64_t origStart = toOrig(start), origEnd = toOrig(end);
  if (origStart < 0 || origEnd < 0)
    return original;
  return text::encodeUtf8(
      Codepoints(orig.begin() + origStart, orig.begin() + origEnd + 1));
}

std::map<std::string, std::vector<Candidate>>
predictAnswers(const std::vector<Example> &examples,
               const std::vector<Feature> &features,
               const std::vector<std::vector<float>> &startLogits,
               const std::vector<std::vector<float>> &endLogits,
               const text::Vocab &vocab, const PredictOptions &o) {
  if (o.nBest < 1 || o.maxAnswerLength < 1)
    throw data::DataError(fmt::format(
        "SQuAD answers: --n-best-size {} and --max-answer-length {} must be "
        "at least 1",
        o.nBest, o.maxAnswerLength));
  struct Span {
    size_t feature;
    int64_t start, end;
    double startLogit, endLogit;
    size_t order; // when it was found
  };
  std::vector<std::vector<size_t>> featuresOf(examples.size());
  for (size_t f = 0; f < features.size(); ++f)
    featuresOf[static_cast<size_t>(features[f].example)].push_back(f);
  std::map<std::string, std::vector<Candidate>> out;
  for (size_t x = 0; x < examples.size(); ++x) {
    const Example &e = examples[x];
    std::vector<Span> spans;
    for (size_t f : featuresOf[x]) {
      const Feature &feature = features[f];
      int64_t n = static_cast<int64_t>(feature.ids.size());
      for (int64_t s : best(startLogits[f], o.nBest))
        for (int64_t t : best(endLogits[f], o.nBest)) {
          if (s >= n || t >= n || feature.word[s] < 0 || feature.word[t] < 0 ||
              !feature.maxContext[s] || t < s || t - s + 1 > o.maxAnswerLength)
            continue;
          spans.push_back(
              {f, s, t, startLogits[f][s], endLogits[f][t], spans.size()});
        }
    }
    // By total logit, ties in the order found (Python's stable sort).
    std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
      double x = a.startLogit + a.endLogit, y = b.startLogit + b.endLogit;
      return x > y || (x == y && a.order < b.order);
    });
    std::vector<Candidate> nbest;
    std::set<std::string> seen;
    for (const Span &span : spans) {
      if (static_cast<int64_t>(nbest.size()) >= o.nBest)
        break;
      const Feature &feature = features[span.feature];
      // The WordPiece text, "##" joined, spaces collapsed.
      std::string pieces;
      for (int64_t i = span.start; i <= span.end; ++i)
        pieces += (i > span.start ? " " : "") + vocab.token(feature.ids[i]);
      std::string joined;
      for (size_t i = 0; i < pieces.size(); ++i) {
        if (pieces.compare(i, 3, " ##") == 0) {
          i += 2;
          continue;
        }
        if (pieces.compare(i, 2, "##") == 0) {
          i += 1;
          continue;
        }
        joined += pieces[i];
      }
      std::string predicted = text::pythonCollapse(text::decodeUtf8(joined));
      std::string original;
      for (int64_t w = feature.word[span.start]; w <= feature.word[span.end];
           ++w)
        original += (w > feature.word[span.start] ? " " : "") + e.words[w];
      std::string answer = finalText(predicted, original, o.lowerCase);
      if (!seen.insert(answer).second)
        continue;
      nbest.push_back({answer, span.startLogit, span.endLogit, 0});
    }
    if (nbest.empty())
      nbest.push_back({"empty", 0, 0, 0}); // the reference's text
    double top = nbest[0].startLogit + nbest[0].endLogit, sum = 0;
    for (Candidate &c : nbest) {
      c.probability = std::exp(c.startLogit + c.endLogit - top);
      sum += c.probability;
    }
    for (Candidate &c : nbest)
      c.probability /= sum;
    out[e.id] = std::move(nbest);
  }
  return out;
}

void writePredictions(
    const std::map<std::string, std::vector<Candidate>> &answers,
    const std::string &predictionsPath, const std::string &nbestPath) {
  nlohmann::ordered_json best = nlohmann::ordered_json::object(),
                         nbest = nlohmann::ordered_json::object();
  for (const auto &[id, candidates] : answers) {
    best[id] = candidates.empty() ? std::string("empty") : candidates[0].text;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Candidate &c : candidates)
      list.push_back({{"text", c.text},
                      {"probability", c.probability},
                      {"start_logit", c.startLogit},
                      {"end_logit", c.endLogit}});
    nbest[id] = std::move(list);
  }
  auto write = [](const std::string &path, const nlohmann::ordered_json &j) {
    if (std::optional<std::string> error =
            writeFileAtomically(path, j.dump(4) + "\n"))
      throw data::DataError(*error);
  };
  write(predictionsPath, best);
  if (!nbestPath.empty())
    write(nbestPath, nbest);
}

} // namespace ferry::squad
