// ferry-datagen: writes MLPerf-layout pretraining data (HDF5 or TFRecord)
// from ferry's seeded synthetic samples, for tests, examples and benchmarks
// where the real dataset is not at hand, or (--from-text, FromText.cpp)
// from a text corpus and a BERT vocabulary.
//
//   ferry-datagen --format hdf5 --seq 128 --predictions 20 --vocab 30522
//       --samples 1000 --seed 7 -o shard-0.hdf5   (one command line)
#include "tools/ferry-datagen/FromText.h"

#include "runtime/Progress.h"
#include "training/data/MlperfData.h"
#include "training/data/SyntheticData.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

namespace {

// Copies `piece`'s rows into `batch` from row `at` on.
void appendRows(ferry::data::HostBatch &batch,
                const ferry::data::HostBatch &piece, int64_t at) {
  auto place = [&](auto &to, const auto &from, int64_t width) {
    std::copy(from.begin(), from.end(), to.begin() + at * width);
  };
  place(batch.inputIds, piece.inputIds, batch.seq);
  place(batch.segmentIds, piece.segmentIds, batch.seq);
  place(batch.inputMask, piece.inputMask, batch.seq);
  place(batch.maskedPositions, piece.maskedPositions, batch.predictions);
  place(batch.maskedIds, piece.maskedIds, batch.predictions);
  place(batch.maskedWeights, piece.maskedWeights, batch.predictions);
  place(batch.nspLabels, piece.nspLabels, 1);
  place(batch.nspWeights, piece.nspWeights, 1);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{
      "ferry-datagen: MLPerf-layout data files (HDF5 or TFRecord) of seeded "
      "synthetic samples, or, with --from-text, of masked-LM / next-sentence "
      "samples made from text files as Google's and MLPerf's "
      "create_pretraining_data.py make them"};
  std::string format = "hdf5", output, vocab = "30522", shard = "0/1";
  int64_t seq = 128, predictions = 20, samples = 64, first = 0;
  int64_t seed = 1;
  ferry::datagen::FromTextOptions text;
  app.add_option("--format", format, "hdf5 or tfrecord")
      ->check(CLI::IsMember({"hdf5", "tfrecord"}))
      ->capture_default_str();
  app.add_option("--seq", seq, "Sequence length")->capture_default_str();
  app.add_option("--predictions", predictions, "Masked slots per sample")
      ->capture_default_str();
  app.add_option("--vocab", vocab,
                 "Synthetic: the vocabulary size; --from-text: the vocabulary "
                 "file (vocab.txt, one token per line)")
      ->capture_default_str();
  app.add_option("--samples", samples, "Synthetic: samples to write")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--first", first,
                 "Synthetic: index of the first sample (so several files "
                 "hold different samples)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of the samples")->capture_default_str();
  app.add_option("-o,--output", output,
                 "Synthetic: the file to write; --from-text: the directory of "
                 "the shards (part-KKKKK-of-NNNNN.hdf5, one per input file)")
      ->required();
  app.add_option("--from-text", text.inputs,
                 "Text files, or directories of them: one sentence a line, "
                 "documents separated by blank lines (UTF-8)");
  app.add_option("--masked-lm-prob", text.samples.maskedLmProb,
                 "--from-text: fraction of the tokens masked")
      ->capture_default_str();
  app.add_option("--short-seq-prob", text.samples.shortSeqProb,
                 "--from-text: probability of a shorter target length")
      ->capture_default_str();
  app.add_option("--dupe-factor", text.samples.dupeFactor,
                 "--from-text: passes over the documents, each with other "
                 "masks")
      ->capture_default_str();
  app.add_flag("--whole-word-mask", text.samples.wholeWordMask,
               "--from-text: mask all pieces of a word together");
  app.add_flag("--cased", text.cased,
               "--from-text: a cased vocabulary (keep case and accents)");
  app.add_option("--shard", shard,
                 "--from-text: this process's part, i/n: the input files k "
                 "with k % n == i (run n processes for n parts)")
      ->capture_default_str();
  bool pack = false;
  int64_t perPack = 3;
  app.add_flag("--pack", pack,
               "--from-text: pack several samples into each row (shortest-"
               "pack-first histogram packing); train with "
               "model.max_sequences_per_pack set to --max-sequences-per-pack");
  app.add_option("--max-sequences-per-pack", perPack,
                 "--from-text --pack: sequences a row holds at most")
      ->capture_default_str();
  app.add_flag("--verbose", text.verbose,
               "--from-text: name each shard as it is written");
  CLI11_PARSE(app, argc, argv);
  if (!text.inputs.empty()) {
    try {
      if (app.count("--samples") || app.count("--first"))
        throw std::invalid_argument(
            "--samples and --first are for synthetic samples; --from-text "
            "makes every sample its text holds (--dupe-factor sets how many "
            "passes)");
      int64_t i = -1, n = -1;
      char extra;
      if (std::sscanf(shard.c_str(), "%lld/%lld%c",
                      reinterpret_cast<long long *>(&i),
                      reinterpret_cast<long long *>(&n), &extra) != 2 ||
          n < 1 || i < 0 || i >= n)
        throw std::invalid_argument(
            "--shard " + shard +
            ": expected i/n with 0 <= i < n, e.g. --shard 3/8");
      if (!vocab.empty() &&
          vocab.find_first_not_of("0123456789") == std::string::npos)
        throw std::invalid_argument(
            "--from-text needs --vocab FILE, the vocabulary (vocab.txt), not "
            "a size (" +
            vocab + ")");
      if (app.count("--max-sequences-per-pack") && !pack)
        throw std::invalid_argument(
            "--max-sequences-per-pack is for packed rows; add --pack");
      if (pack && (perPack < 2 || perPack * 3 > seq))
        throw std::invalid_argument(
            "--max-sequences-per-pack " + std::to_string(perPack) +
            ": expected 2 to " + std::to_string(seq / 3) +
            " (--seq / 3: a sequence has at least 3 tokens)");
      text.pack = pack ? perPack : 0;
      text.vocab = vocab;
      text.output = output;
      text.format = format;
      text.shard = i;
      text.shards = n;
      text.samples.seq = seq;
      text.samples.predictions = predictions;
      text.samples.seed = static_cast<uint64_t>(seed);
      return ferry::datagen::runFromText(text);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "ferry-datagen: error: %s\n", e.what());
      return 1;
    }
  }
  if (pack || app.count("--max-sequences-per-pack")) {
    std::fprintf(stderr, "ferry-datagen: error: --pack packs the samples of "
                         "--from-text; synthetic samples are written one a "
                         "row\n");
    return 1;
  }
  int64_t vocabSize = 0;
  try {
    vocabSize = std::stoll(vocab);
  } catch (const std::exception &) {
    std::fprintf(stderr,
                 "ferry-datagen: error: --vocab %s: synthetic samples need a "
                 "vocabulary size (or give --from-text with a vocabulary "
                 "file)\n",
                 vocab.c_str());
    return 1;
  }
  try {
    // A pool as large as the indices asked for: every sample distinct.
    ferry::data::SyntheticData data(seq, predictions, vocabSize,
                                    static_cast<uint64_t>(seed),
                                    first + samples);
    // Made in pieces, so a large file shows its progress as it is made.
    ferry::data::HostBatch batch, piece;
    batch.resize(samples, seq, predictions);
    {
      ferry::Progress progress("ferry-datagen: making samples",
                               static_cast<double>(samples), "samples");
      constexpr int64_t kPiece = 8192;
      for (int64_t done = 0; done < samples; done += kPiece) {
        int64_t count = std::min(kPiece, samples - done);
        data.fill(first + done, count, piece);
        appendRows(batch, piece, done);
        progress.update(static_cast<double>(done + count));
      }
    }
    ferry::Progress progress("ferry-datagen: writing " + output,
                             static_cast<double>(samples), "samples");
    auto written = [&](double fraction) {
      progress.update(fraction * static_cast<double>(samples));
    };
    if (format == "hdf5")
      ferry::data::writeHdf5(output, batch, written);
    else
      ferry::data::writeTfRecord(output, batch, written);
    progress.finish();
    std::printf("wrote %lld samples (seq %lld, %lld predictions) to %s\n",
                static_cast<long long>(samples), static_cast<long long>(seq),
                static_cast<long long>(predictions), output.c_str());
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ferry-datagen: error: %s\n", e.what());
    return 1;
  }
}
