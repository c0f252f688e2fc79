// Masked-LM / next-sentence samples from text (PretrainingData.h).
#include "training/text/PretrainingData.h"

#include "training/data/DataError.h"
#include "training/text/Unicode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

namespace ferry::text {
namespace {

// The reference scripts' random.Random calls, on a generator whose output
// the C++ standard fixes (mt19937_64), with the mappings written out so no
// library's distribution changes them.
class Rng {
public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  double uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }
  // An integer in [lo, hi], both included.
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(g_() % static_cast<uint64_t>(hi - lo + 1));
  }
  template <typename T> void shuffle(std::vector<T> &v) {
    for (int64_t i = static_cast<int64_t>(v.size()) - 1; i > 0; --i)
      std::swap(v[i], v[between(0, i)]);
  }

private:
  std::mt19937_64 g_;
};

// Python's line.strip() == "": every character whitespace.
bool blank(const std::string &line) {
  Codepoints cps = decodeUtf8(line);
  return std::all_of(cps.begin(), cps.end(), isPythonSpace);
}

// Shortens the pair to `maxTokens`, a token at a time from the longer one,
// from its front or its back at random.
void truncatePair(std::vector<int32_t> &a, std::vector<int32_t> &b,
                  int64_t maxTokens, Rng &rng) {
  while (static_cast<int64_t>(a.size() + b.size()) > maxTokens) {
    std::vector<int32_t> &longer = a.size() > b.size() ? a : b;
    if (rng.uniform() < 0.5)
      longer.erase(longer.begin());
    else
      longer.pop_back();
  }
}

void maskTokens(Sample &s, const Vocab &vocab, const SampleOptions &o,
                Rng &rng) {
  std::vector<std::vector<int64_t>> candidates;
  for (int64_t i = 0; i < static_cast<int64_t>(s.ids.size()); ++i) {
    int32_t id = s.ids[i];
    if (id == vocab.cls() || id == vocab.sep())
      continue;
    if (o.wholeWordMask && !candidates.empty() &&
        vocab.token(id).rfind("##", 0) == 0)
      candidates.back().push_back(i);
    else
      candidates.push_back({i});
  }
  rng.shuffle(candidates);
  // Python's int(round(x)): halves to even.
  int64_t toPredict = std::min<int64_t>(
      o.predictions,
      std::max<int64_t>(
          1, static_cast<int64_t>(std::nearbyint(
                 static_cast<double>(s.ids.size()) * o.maskedLmProb))));
  std::vector<std::pair<int64_t, int32_t>> masked; // position, label
  std::vector<int32_t> original = s.ids;
  for (const std::vector<int64_t> &word : candidates) {
    if (static_cast<int64_t>(masked.size()) >= toPredict)
      break;
    if (static_cast<int64_t>(masked.size() + word.size()) > toPredict)
      continue;
    for (int64_t i : word) {
      int32_t replacement;
      if (rng.uniform() < 0.8)
        replacement = vocab.mask();
      else if (rng.uniform() < 0.5)
        replacement = original[i];
      else
        replacement = static_cast<int32_t>(rng.between(0, vocab.size() - 1));
      s.ids[i] = replacement;
      masked.push_back({i, original[i]});
    }
  }
  std::sort(masked.begin(), masked.end());
  for (auto [position, label] : masked) {
    s.maskedPositions.push_back(static_cast<int32_t>(position));
    s.maskedIds.push_back(label);
  }
}

// The samples of document `index`: its sentences packed into chunks of
// about the target length, each split into segments a and b.
void samplesOf(const std::vector<const Document *> &documents, size_t index,
               const Vocab &vocab, const SampleOptions &o, Rng &rng,
               std::vector<Sample> &out) {
  const Document &document = *documents[index];
  int64_t maxTokens = o.seq - 3; // [CLS] a [SEP] b [SEP]
  int64_t target = maxTokens;
  if (rng.uniform() < o.shortSeqProb)
    target = rng.between(2, maxTokens);
  std::vector<const std::vector<int32_t> *> chunk;
  int64_t chunkLength = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(document.size()); ++i) {
    chunk.push_back(&document[i]);
    chunkLength += static_cast<int64_t>(document[i].size());
    if (i + 1 < static_cast<int64_t>(document.size()) && chunkLength < target)
      continue;
    int64_t aEnd = 1;
    if (chunk.size() >= 2)
      aEnd = rng.between(1, static_cast<int64_t>(chunk.size()) - 1);
    std::vector<int32_t> a, b;
    for (int64_t j = 0; j < aEnd; ++j)
      a.insert(a.end(), chunk[j]->begin(), chunk[j]->end());
    Sample s;
    if (chunk.size() == 1 || rng.uniform() < 0.5) {
      s.randomNext = true;
      int64_t targetB = target - static_cast<int64_t>(a.size());
      size_t other = index;
      for (int tries = 0; tries < 10; ++tries) {
        other = static_cast<size_t>(
            rng.between(0, static_cast<int64_t>(documents.size()) - 1));
        if (other != index)
          break;
      }
      const Document &random = *documents[other];
      int64_t start = rng.between(0, static_cast<int64_t>(random.size()) - 1);
      for (int64_t j = start; j < static_cast<int64_t>(random.size()); ++j) {
        b.insert(b.end(), random[j].begin(), random[j].end());
        if (static_cast<int64_t>(b.size()) >= targetB)
          break;
      }
      // The chunk's unused sentences start the next chunk.
      i -= static_cast<int64_t>(chunk.size()) - aEnd;
    } else {
      for (size_t j = static_cast<size_t>(aEnd); j < chunk.size(); ++j)
        b.insert(b.end(), chunk[j]->begin(), chunk[j]->end());
    }
    truncatePair(a, b, maxTokens, rng);
    s.ids.push_back(vocab.cls());
    s.ids.insert(s.ids.end(), a.begin(), a.end());
    s.ids.push_back(vocab.sep());
    s.segmentIds.assign(s.ids.size(), 0);
    s.ids.insert(s.ids.end(), b.begin(), b.end());
    s.ids.push_back(vocab.sep());
    s.segmentIds.resize(s.ids.size(), 1);
    maskTokens(s, vocab, o, rng);
    out.push_back(std::move(s));
    chunk.clear();
    chunkLength = 0;
  }
}

} // namespace

std::vector<Document>
readDocuments(const std::string &path, const Tokenizer &tokenizer,
              CorpusCounts &counts,
              const std::function<void(int64_t)> &progress) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw data::DataError(fmt::format("{}: cannot open the text file", path));
  std::vector<Document> documents(1);
  std::string line;
  int64_t bytes = 0;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    bytes += static_cast<int64_t>(line.size()) + 1;
    if (progress && number % 1024 == 0)
      progress(bytes);
    int64_t bad = 0;
    if (!isUtf8(line, bad))
      throw data::DataError(fmt::format(
          "{}:{}: the text is not UTF-8 (byte {} of the line); convert the "
          "file to UTF-8 (iconv -f ENCODING -t UTF-8)",
          path, number, bad + 1));
    if (blank(line)) {
      if (!documents.back().empty())
        documents.emplace_back();
      continue;
    }
    std::vector<int32_t> ids = tokenizer.encode(line);
    if (ids.empty())
      continue;
    counts.sentences += 1;
    counts.tokens += static_cast<int64_t>(ids.size());
    documents.back().push_back(std::move(ids));
  }
  if (documents.back().empty())
    documents.pop_back();
  counts.documents += static_cast<int64_t>(documents.size());
  if (progress)
    progress(bytes);
  return documents;
}

std::vector<Sample> makeSamples(const std::vector<Document> &documents,
                                const Vocab &vocab, const SampleOptions &o) {
  if (o.seq < 5)
    throw data::DataError(fmt::format(
        "--seq {} leaves no room for two segments: [CLS] a [SEP] b [SEP] "
        "needs at least 5",
        o.seq));
  if (o.predictions < 1 || o.maskedLmProb <= 0 || o.maskedLmProb > 1 ||
      o.shortSeqProb < 0 || o.shortSeqProb > 1 || o.dupeFactor < 1)
    throw data::DataError(fmt::format(
        "impossible sample options: --predictions {} (at least 1), "
        "--masked-lm-prob {} (in (0, 1]), --short-seq-prob {} (in [0, 1]), "
        "--dupe-factor {} (at least 1)",
        o.predictions, o.maskedLmProb, o.shortSeqProb, o.dupeFactor));
  Rng rng(o.seed);
  std::vector<const Document *> shuffled;
  for (const Document &d : documents)
    shuffled.push_back(&d);
  rng.shuffle(shuffled);
  std::vector<Sample> samples;
  for (int64_t pass = 0; pass < o.dupeFactor; ++pass)
    for (size_t d = 0; d < shuffled.size(); ++d)
      samplesOf(shuffled, d, vocab, o, rng, samples);
  rng.shuffle(samples);
  return samples;
}

void toBatch(const std::vector<Sample> &samples, int64_t seq,
             int64_t predictions, data::HostBatch &batch) {
  batch.resize(static_cast<int64_t>(samples.size()), seq, predictions);
  for (size_t r = 0; r < samples.size(); ++r) {
    const Sample &s = samples[r];
    int64_t row = static_cast<int64_t>(r);
    for (size_t i = 0; i < s.ids.size(); ++i) {
      batch.inputIds[row * seq + i] = s.ids[i];
      batch.segmentIds[row * seq + i] = s.segmentIds[i];
      batch.inputMask[row * seq + i] = 1;
    }
    for (size_t k = 0; k < s.maskedPositions.size(); ++k) {
      batch.maskedPositions[row * predictions + k] = s.maskedPositions[k];
      batch.maskedIds[row * predictions + k] = s.maskedIds[k];
      batch.maskedWeights[row * predictions + k] = 1.0f;
    }
    batch.nspLabels[r] = s.randomNext ? 1 : 0;
    batch.nspWeights[r] = 1.0f;
  }
}

} // namespace ferry::text
