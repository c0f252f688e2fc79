// ferry-datagen: writes MLPerf-layout pretraining data (HDF5 or TFRecord)
// from ferry's seeded synthetic samples, for tests, examples and benchmarks
// where the real dataset is not at hand.
//
//   ferry-datagen --format hdf5 --seq 128 --predictions 20 --vocab 30522
//       --samples 1000 --seed 7 -o shard-0.hdf5   (one command line)
#include "runtime/Progress.h"
#include "runtime/data/MlperfData.h"
#include "runtime/data/SyntheticData.h"

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
  CLI::App app{"ferry-datagen: MLPerf-layout data files of seeded synthetic "
               "samples"};
  std::string format = "hdf5", output;
  int64_t seq = 128, predictions = 20, vocab = 30522, samples = 64, first = 0;
  int64_t seed = 1;
  app.add_option("--format", format, "hdf5 or tfrecord")
      ->check(CLI::IsMember({"hdf5", "tfrecord"}))
      ->capture_default_str();
  app.add_option("--seq", seq, "Sequence length")->capture_default_str();
  app.add_option("--predictions", predictions, "Masked slots per sample")
      ->capture_default_str();
  app.add_option("--vocab", vocab, "Vocabulary size")->capture_default_str();
  app.add_option("--samples", samples, "Samples to write")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--first", first,
                 "Index of the first synthetic sample (so several files "
                 "hold different samples)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of the samples")->capture_default_str();
  app.add_option("-o,--output", output, "The file to write")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    // A pool as large as the indices asked for: every sample distinct.
    ferry::data::SyntheticData data(
        seq, predictions, vocab, static_cast<uint64_t>(seed), first + samples);
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
