// SQuAD v1.1 examples and features (SquadData.h).
#include "training/squad/SquadData.h"

#include "training/data/DataError.h"
#include "training/squad/SquadJson.h"
#include "training/text/Unicode.h"

#include <fmt/format.h>

#include <algorithm>

namespace ferry::squad {
namespace {

using text::Codepoints;

// run_squad.py's is_whitespace: the four ASCII ones and U+202F.
bool isContextSpace(int32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\r' || cp == '\n' || cp == 0x202F;
}

// Whether this window has the most context around token `position` of
// all windows that hold it: min(left, right) + 0.01 * window length, the
// first window on a tie.
bool isMaxContext(const std::vector<std::pair<int64_t, int64_t>> &windows,
                  size_t current, int64_t position) {
  double best = -1;
  size_t bestWindow = 0;
  for (size_t w = 0; w < windows.size(); ++w) {
    auto [start, length] = windows[w];
    int64_t end = start + length - 1;
    if (position < start || position > end)
      continue;
    double score =
        static_cast<double>(std::min(position - start, end - position)) +
        0.01 * static_cast<double>(length);
    if (score > best) {
      best = score;
      bestWindow = w;
    }
  }
  return bestWindow == current;
}

} // namespace

std::vector<Example> readExamples(const std::string &path, bool training,
                                  int64_t *skipped) {
  using T = nlohmann::json::value_t;
  nlohmann::json root = readJson(path, "SQuAD dataset");
  std::vector<Example> out;
  // The current paragraph's context, its words and each character's word.
  Codepoints context;
  std::vector<std::string> words;
  std::vector<int64_t> wordOf;
  forEachQuestion(
      root, path,
      [&](const nlohmann::json &paragraph, const std::string &at) {
        context =
            text::decodeUtf8(member(paragraph, "context", T::string, path, at)
                                 .get<std::string>());
        // Words, and the word of each character.
        words.clear();
        wordOf.clear();
        Codepoints word;
        bool afterSpace = true;
        for (int32_t cp : context) {
          if (isContextSpace(cp)) {
            afterSpace = true;
          } else {
            if (afterSpace && !word.empty()) {
              words.push_back(text::encodeUtf8(word));
              word.clear();
            }
            word.push_back(cp);
            afterSpace = false;
          }
          wordOf.push_back(static_cast<int64_t>(words.size()) +
                           (word.empty() ? 0 : 1) - 1);
        }
        if (!word.empty())
          words.push_back(text::encodeUtf8(word));
      },
      [&](const nlohmann::json &qa, const std::string &at) {
        Example e;
        e.id = member(qa, "id", T::string, path, at).get<std::string>();
        e.question =
            member(qa, "question", T::string, path, at).get<std::string>();
        e.words = words;
        if (training) {
          const nlohmann::json &answers =
              member(qa, "answers", T::array, path, at);
          if (answers.size() != 1)
            throw data::DataError(fmt::format(
                "{}: {} (question {}) has {} answers; for training each "
                "question needs exactly one (SQuAD v1.1's train file has "
                "one; a dev file's several are for evaluation)",
                path, at, e.id, answers.size()));
          std::string aat = at + ".answers[0]";
          Codepoints answer =
              text::decodeUtf8(member(answers[0], "text", T::string, path, aat)
                                   .get<std::string>());
          const nlohmann::json &start = answers[0].contains("answer_start")
                                            ? answers[0]["answer_start"]
                                            : nlohmann::json();
          if (!start.is_number_integer())
            throw data::DataError(fmt::format(
                "{}: {} has no integer \"answer_start\" (the character "
                "offset of the answer in its context)",
                path, aat));
          int64_t offset = start.get<int64_t>();
          int64_t length = static_cast<int64_t>(answer.size());
          if (offset < 0 || length == 0 ||
              offset > static_cast<int64_t>(context.size()) - length ||
              !std::equal(answer.begin(), answer.end(),
                          context.begin() + offset)) {
            Codepoints there;
            for (int64_t i = std::max<int64_t>(0, offset);
                 i < std::min<int64_t>(offset + std::max<int64_t>(length, 1),
                                       static_cast<int64_t>(context.size()));
                 ++i)
              there.push_back(context[i]);
            throw data::DataError(fmt::format(
                "{}: {} (question {}): the answer \"{}\" is not at "
                "answer_start {} of its context (there the context reads "
                "\"{}\"); answer_start counts characters (code points) from "
                "0: fix the offset or the text",
                path, aat, e.id, text::encodeUtf8(answer), offset,
                text::encodeUtf8(there)));
          }
          e.answer = text::encodeUtf8(answer);
          e.startWord = wordOf[offset];
          e.endWord = wordOf[offset + length - 1];
          // An answer that starts in the context's leading whitespace has
          // no first word (the reference reads a garbage span): skipped.
          if (e.startWord < 0) {
            if (skipped)
              *skipped += 1;
            return;
          }
          // The reference scripts skip an answer whose words do not hold
          // it once whitespace is normalised (a few in SQuAD's train file).
          std::string spanText;
          for (int64_t w = e.startWord; w <= e.endWord; ++w)
            spanText += (w > e.startWord ? " " : "") + e.words[w];
          if (spanText.find(text::pythonCollapse(answer)) ==
              std::string::npos) {
            if (skipped)
              *skipped += 1;
            return;
          }
        }
        out.push_back(std::move(e));
      });
  return out;
}

std::vector<Feature> makeFeatures(const std::vector<Example> &examples,
                                  const text::Tokenizer &tokenizer,
                                  const FeatureOptions &o, bool training) {
  if (o.seq < 4 || o.docStride < 1 || o.maxQueryLength < 0)
    throw data::DataError(fmt::format(
        "SQuAD features: sequence length {} (at least 4), document stride {} "
        "(at least 1) and maximum query length {} (at least 0) cannot make "
        "windows",
        o.seq, o.docStride, o.maxQueryLength));
  const text::Vocab &vocab = tokenizer.vocab();
  std::vector<Feature> out;
  for (size_t x = 0; x < examples.size(); ++x) {
    const Example &e = examples[x];
    std::vector<int32_t> query = tokenizer.encode(e.question);
    if (static_cast<int64_t>(query.size()) > o.maxQueryLength)
      query.resize(static_cast<size_t>(o.maxQueryLength));
    // The context's tokens, each with its word, and each word's first.
    std::vector<int32_t> doc;
    std::vector<int64_t> docWord, firstToken;
    for (size_t w = 0; w < e.words.size(); ++w) {
      firstToken.push_back(static_cast<int64_t>(doc.size()));
      for (int32_t id : tokenizer.encode(e.words[w])) {
        doc.push_back(id);
        docWord.push_back(static_cast<int64_t>(w));
      }
    }
    int64_t answerStart = -1, answerEnd = -1;
    if (training) {
      answerStart = firstToken[e.startWord];
      answerEnd = e.endWord + 1 < static_cast<int64_t>(e.words.size())
                      ? firstToken[e.endWord + 1] - 1
                      : static_cast<int64_t>(doc.size()) - 1;
      // The tightest span whose tokens are the answer's own.
      std::vector<int32_t> answer = tokenizer.encode(e.answer);
      bool found = false;
      for (int64_t s = answerStart; s <= answerEnd && !found; ++s)
        for (int64_t t = answerEnd; t >= s && !found; --t)
          if (t - s + 1 == static_cast<int64_t>(answer.size()) &&
              std::equal(answer.begin(), answer.end(), doc.begin() + s)) {
            answerStart = s;
            answerEnd = t;
            found = true;
          }
    }
    int64_t room = o.seq - static_cast<int64_t>(query.size()) - 3;
    if (room < 1)
      throw data::DataError(fmt::format(
          "SQuAD features: a sequence of {} tokens leaves no room for the "
          "context after a question of {} tokens; raise the sequence length "
          "or lower --max-query-length",
          o.seq, query.size()));
    std::vector<std::pair<int64_t, int64_t>> windows; // start, length
    for (int64_t start = 0; start < static_cast<int64_t>(doc.size());) {
      int64_t length =
          std::min<int64_t>(static_cast<int64_t>(doc.size()) - start, room);
      windows.push_back({start, length});
      if (start + length == static_cast<int64_t>(doc.size()))
        break;
      start += std::min(length, o.docStride);
    }
    for (size_t w = 0; w < windows.size(); ++w) {
      auto [start, length] = windows[w];
      Feature f;
      f.example = static_cast<int64_t>(x);
      auto push = [&](int32_t id, int32_t segment, int64_t word, bool max) {
        f.ids.push_back(id);
        f.segmentIds.push_back(segment);
        f.word.push_back(word);
        f.maxContext.push_back(max ? 1 : 0);
      };
      push(vocab.cls(), 0, -1, false);
      for (int32_t id : query)
        push(id, 0, -1, false);
      push(vocab.sep(), 0, -1, false);
      for (int64_t i = start; i < start + length; ++i)
        push(doc[i], 1, docWord[i], isMaxContext(windows, w, i));
      push(vocab.sep(), 1, -1, false);
      if (training && answerStart >= start && answerEnd <= start + length - 1) {
        int64_t offset = static_cast<int64_t>(query.size()) + 2 - start;
        f.start = answerStart + offset;
        f.end = answerEnd + offset;
      }
      out.push_back(std::move(f));
    }
  }
  return out;
}

} // namespace ferry::squad
