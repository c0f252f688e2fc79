// SQuAD v1.1's official evaluation (SquadEval.h).
#include "training/squad/SquadEval.h"

#include "training/data/DataError.h"
#include "training/squad/SquadJson.h"
#include "training/text/Unicode.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace ferry::squad {
namespace {

using text::Codepoints;

// Python's str.split() of `text`, each word as UTF-8.
std::vector<std::string> words(const std::string &s) {
  std::vector<std::string> out;
  for (const Codepoints &w : text::pythonSplit(text::decodeUtf8(s)))
    out.push_back(text::encodeUtf8(w));
  return out;
}

} // namespace

std::string normalizeAnswer(const std::string &answer) {
  Codepoints cps = text::decodeUtf8(answer);
  text::pythonLower(cps);
  Codepoints kept;
  for (int32_t cp : cps)
    if (!text::isAsciiPunctuation(cp))
      kept.push_back(cp);
  // \b(a|an|the)\b -> " ": a run of word characters that is one of them.
  Codepoints out;
  size_t i = 0;
  while (i < kept.size()) {
    if (!text::isPythonWordChar(kept[i])) {
      out.push_back(kept[i++]);
      continue;
    }
    size_t end = i;
    while (end < kept.size() && text::isPythonWordChar(kept[end]))
      ++end;
    Codepoints word(kept.begin() + static_cast<std::ptrdiff_t>(i),
                    kept.begin() + static_cast<std::ptrdiff_t>(end));
    std::string w = text::encodeUtf8(word);
    if (w == "a" || w == "an" || w == "the")
      out.push_back(' ');
    else
      out.insert(out.end(), word.begin(), word.end());
    i = end;
  }
  return text::pythonCollapse(out);
}

double exactMatch(const std::string &prediction, const std::string &truth) {
  return normalizeAnswer(prediction) == normalizeAnswer(truth) ? 1.0 : 0.0;
}

double f1Score(const std::string &prediction, const std::string &truth) {
  std::vector<std::string> p = words(normalizeAnswer(prediction));
  std::vector<std::string> t = words(normalizeAnswer(truth));
  std::unordered_map<std::string, int64_t> counts;
  for (const std::string &w : t)
    counts[w] += 1;
  int64_t same = 0;
  for (const std::string &w : p) {
    auto it = counts.find(w);
    if (it != counts.end() && it->second > 0) {
      it->second -= 1;
      same += 1;
    }
  }
  if (same == 0)
    return 0.0;
  double precision = static_cast<double>(same) / static_cast<double>(p.size());
  double recall = static_cast<double>(same) / static_cast<double>(t.size());
  return 2 * precision * recall / (precision + recall);
}

std::vector<GoldQuestion> readGoldQuestions(const std::string &path) {
  using T = nlohmann::json::value_t;
  nlohmann::json root = readJson(path, "SQuAD dataset");
  std::vector<GoldQuestion> out;
  forEachQuestion(
      root, path, [](const nlohmann::json &, const std::string &) {},
      [&](const nlohmann::json &qa, const std::string &at) {
        GoldQuestion g;
        g.id = member(qa, "id", T::string, path, at).get<std::string>();
        const nlohmann::json &answers =
            member(qa, "answers", T::array, path, at);
        for (size_t k = 0; k < answers.size(); ++k)
          g.answers.push_back(member(answers[k], "text", T::string, path,
                                     fmt::format("{}.answers[{}]", at, k))
                                  .get<std::string>());
        out.push_back(std::move(g));
      });
  return out;
}

std::map<std::string, std::string> readPredictions(const std::string &path) {
  nlohmann::json root = readJson(path, "predictions file");
  if (!root.is_object())
    throw data::DataError(fmt::format(
        "{}: the predictions file must be one JSON object, {{\"question id\": "
        "\"answer text\", ...}} (as ferry squad predict writes it)",
        path));
  std::map<std::string, std::string> out;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (!it.value().is_string())
      throw data::DataError(fmt::format(
          "{}: the prediction for \"{}\" is not a string", path, it.key()));
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

Scores evaluate(const std::vector<GoldQuestion> &questions,
                const std::map<std::string, std::string> &predictions,
                const std::function<void(const std::string &)> &unanswered) {
  Scores s;
  double em = 0, f1 = 0;
  for (const GoldQuestion &q : questions) {
    s.questions += 1;
    auto it = predictions.find(q.id);
    if (it == predictions.end()) {
      s.unanswered += 1;
      if (unanswered)
        unanswered(q.id);
      continue;
    }
    double bestEm = 0, bestF1 = 0;
    for (const std::string &truth : q.answers) {
      bestEm = std::max(bestEm, exactMatch(it->second, truth));
      bestF1 = std::max(bestF1, f1Score(it->second, truth));
    }
    em += bestEm;
    f1 += bestF1;
  }
  if (s.questions > 0) {
    s.exactMatch = 100.0 * em / static_cast<double>(s.questions);
    s.f1 = 100.0 * f1 / static_cast<double>(s.questions);
  }
  return s;
}

} // namespace ferry::squad
