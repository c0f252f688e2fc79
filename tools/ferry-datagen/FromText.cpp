// ferry-datagen --from-text: MLPerf-layout shards of masked-LM / next-
// sentence samples made from text files (training/text/PretrainingData.h),
// one shard per input file, so several processes (--shard i/n) prepare a
// large corpus in parallel without overlap. Prints progress with the time
// left, and the corpus's statistics at the end.
#include "tools/ferry-datagen/FromText.h"

#include "runtime/Progress.h"
#include "training/data/DataError.h"
#include "training/data/MlperfData.h"
#include "training/data/PackedRows.h"
#include "training/text/Packing.h"
#include "training/text/PretrainingData.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace ferry::datagen {
namespace fs = std::filesystem;
namespace {

// The input files: each file as given, each directory's regular files (not
// hidden), in name order.
std::vector<std::string> inputFiles(const std::vector<std::string> &paths) {
  std::vector<std::string> files;
  for (const std::string &p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> here;
      for (const fs::directory_entry &e : fs::directory_iterator(p, ec))
        if (e.is_regular_file() &&
            e.path().filename().string().rfind('.', 0) != 0)
          here.push_back(e.path().string());
      std::sort(here.begin(), here.end());
      if (here.empty())
        throw data::DataError(
            fmt::format("{}: the directory holds no text files", p));
      files.insert(files.end(), here.begin(), here.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      throw data::DataError(fmt::format(
          "{}: no such text file or directory (--from-text takes files of "
          "one sentence a line, documents separated by blank lines)",
          p));
    }
  }
  return files;
}

// A different stream of samples for each input file, whatever the sharding.
uint64_t fileSeed(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Totals {
  text::CorpusCounts corpus;
  int64_t files = 0, samples = 0, realTokens = 0, maskedSlots = 0;
  int64_t randomNext = 0;
  int64_t packedRows = 0;       // the rows packing fills (would fill: 3 a row)
  int64_t rows = 0;             // the rows written
  std::vector<int64_t> lengths; // histogram: 8 equal bins up to seq
};

void printStatistics(const Totals &t, const FromTextOptions &o) {
  int64_t slots = t.samples * o.samples.seq;
  std::printf("ferry-datagen: %lld files, %lld documents, %lld sentences, "
              "%lld WordPiece tokens\n",
              static_cast<long long>(t.files),
              static_cast<long long>(t.corpus.documents),
              static_cast<long long>(t.corpus.sentences),
              static_cast<long long>(t.corpus.tokens));
  std::printf("  %lld samples of %lld tokens (dupe factor %lld): %lld real "
              "tokens, padding %.1f%%, %.2f masked per sample, %.1f%% random "
              "next sentences\n",
              static_cast<long long>(t.samples),
              static_cast<long long>(o.samples.seq),
              static_cast<long long>(o.samples.dupeFactor),
              static_cast<long long>(t.realTokens),
              slots ? 100.0 * static_cast<double>(slots - t.realTokens) /
                          static_cast<double>(slots)
                    : 0.0,
              t.samples ? static_cast<double>(t.maskedSlots) /
                              static_cast<double>(t.samples)
                        : 0.0,
              t.samples ? 100.0 * static_cast<double>(t.randomNext) /
                              static_cast<double>(t.samples)
                        : 0.0);
  if (t.packedRows > 0 && o.pack > 0)
    std::printf(
        "  packed into %lld rows of up to %lld sequences (shortest-pack-first "
        "histogram packing) instead of %lld: %.2fx fewer, padding %.1f%%\n",
        static_cast<long long>(t.packedRows), static_cast<long long>(o.pack),
        static_cast<long long>(t.samples),
        static_cast<double>(t.samples) / static_cast<double>(t.packedRows),
        100.0 * (1.0 - static_cast<double>(t.realTokens) /
                           static_cast<double>(t.packedRows * o.samples.seq)));
  else if (t.packedRows > 0)
    std::printf(
        "  packed (up to 3 sequences a row, shortest-pack-first "
        "histogram packing) these samples would fill %lld rows "
        "instead of %lld: %.2fx fewer, padding %.1f%%\n",
        static_cast<long long>(t.packedRows), static_cast<long long>(t.samples),
        static_cast<double>(t.samples) / static_cast<double>(t.packedRows),
        100.0 * (1.0 - static_cast<double>(t.realTokens) /
                           static_cast<double>(t.packedRows * o.samples.seq)));
  std::printf("  sample lengths:\n");
  int64_t bins = static_cast<int64_t>(t.lengths.size());
  int64_t most = *std::max_element(t.lengths.begin(), t.lengths.end());
  for (int64_t b = 0; b < bins; ++b) {
    int64_t lo = b * o.samples.seq / bins + 1,
            hi = (b + 1) * o.samples.seq / bins;
    int64_t bar = most ? 40 * t.lengths[b] / most : 0;
    std::printf("    %4lld-%-4lld %9lld %s\n", static_cast<long long>(lo),
                static_cast<long long>(hi),
                static_cast<long long>(t.lengths[b]),
                std::string(static_cast<size_t>(bar), '#').c_str());
  }
}

} // namespace

int runFromText(const FromTextOptions &o) {
  std::vector<std::string> files = inputFiles(o.inputs);
  text::Vocab vocab = text::Vocab::load(o.vocab);
  text::Tokenizer tokenizer(vocab, !o.cased);
  std::error_code ec;
  fs::create_directories(o.output, ec);
  if (!fs::is_directory(o.output))
    throw data::DataError(fmt::format(
        "{}: cannot make the output directory ({})", o.output, ec.message()));
  // This process's files, and their bytes for the progress line.
  std::vector<size_t> mine;
  uintmax_t bytes = 0;
  for (size_t k = 0; k < files.size(); ++k)
    if (static_cast<int64_t>(k % static_cast<size_t>(o.shards)) == o.shard) {
      mine.push_back(k);
      uintmax_t size = fs::file_size(files[k], ec);
      bytes += ec ? 0 : size;
    }
  Totals totals;
  totals.lengths.assign(8, 0);
  Progress progress(fmt::format("ferry-datagen: shard {}/{} ({} of {} files)",
                                o.shard, o.shards, mine.size(), files.size()),
                    static_cast<double>(bytes), "bytes", Progress::Kind::Bytes);
  double before = 0;
  const char *ext = o.format == "hdf5" ? "hdf5" : "tfrecord";
  for (size_t k : mine) {
    const std::string &file = files[k];
    std::vector<text::Document> documents =
        text::readDocuments(file, tokenizer, totals.corpus, [&](int64_t read) {
          progress.update(before + static_cast<double>(read), file);
        });
    uintmax_t size = fs::file_size(file, ec);
    before += ec ? 0.0 : static_cast<double>(size);
    totals.files += 1;
    if (documents.empty()) {
      std::fprintf(stderr,
                   "ferry-datagen: warning: %s has no text; no shard "
                   "written for it\n",
                   file.c_str());
      continue;
    }
    text::SampleOptions so = o.samples;
    so.seed = fileSeed(o.samples.seed, k);
    std::vector<text::Sample> samples = text::makeSamples(documents, vocab, so);
    for (const text::Sample &s : samples) {
      int64_t length = static_cast<int64_t>(s.ids.size());
      totals.realTokens += length;
      totals.maskedSlots += static_cast<int64_t>(s.maskedPositions.size());
      totals.randomNext += s.randomNext ? 1 : 0;
      totals.lengths[std::min<int64_t>(7, (length - 1) * 8 / so.seq)] += 1;
    }
    totals.samples += static_cast<int64_t>(samples.size());
    std::vector<int64_t> lengths;
    for (const text::Sample &s : samples)
      lengths.push_back(static_cast<int64_t>(s.ids.size()));
    std::vector<std::vector<int64_t>> packs =
        text::packSamples(lengths, so.seq, o.pack > 0 ? o.pack : 3);
    data::HostBatch batch;
    text::toBatch(samples, so.seq, so.predictions, batch);
    if (o.pack > 0) // rows of several samples (a few may take two rows)
      batch = data::packRows(batch, packs, o.pack);
    totals.packedRows +=
        o.pack > 0 ? batch.samples : static_cast<int64_t>(packs.size());
    std::string out =
        (fs::path(o.output) /
         fmt::format("part-{:05d}-of-{:05d}.{}", k, files.size(), ext))
            .string();
    // Written to a temporary and renamed: a stopped run leaves no shard
    // that looks complete.
    if (o.format == "hdf5")
      data::writeHdf5(out, batch);
    else
      data::writeTfRecord(out, batch);
    if (o.verbose)
      std::fprintf(stderr, "ferry-datagen: %s -> %s (%zu samples in %lld rows)\n",
                   file.c_str(), out.c_str(), samples.size(),
                   static_cast<long long>(batch.samples));
  }
  progress.finish();
  printStatistics(totals, o);
  return 0;
}

} // namespace ferry::datagen
