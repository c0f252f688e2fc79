// MLPerf BERT pretraining data on disk: the NVIDIA/MLPerf HDF5 layout and the
// reference's TFRecord files of tf.Example records, one file, a directory or
// a glob of them, read in file order or shuffled per epoch, split by
// data-parallel rank, with the next batch read on a background thread while
// the current one computes.
//
// HDF5 (one dataset per feature, first dimension = samples): input_ids,
// input_mask, segment_ids [N, seq]; masked_lm_positions, masked_lm_ids
// [N, predictions]; next_sentence_labels [N] (or [N, 1]); any integer type,
// read as int32. A masked slot counts when it lies before the first zero in
// masked_lm_positions; that slot and the ones after it are read as position
// 0, id 0, weight 0 whatever the file holds there.
//
// TFRecord (records: uint64 length, uint32 masked CRC32C of the length, data,
// uint32 masked CRC32C of the data; both CRCs checked): tf.Example features
// input_ids, input_mask, segment_ids (int64_list of seq), masked_lm_positions,
// masked_lm_ids (int64_list of predictions), masked_lm_weights (float_list of
// predictions), next_sentence_labels (int64_list of 1). A masked slot counts
// when its masked_lm_weights is 1; weights must be 0 or 1 with the counted
// slots first, and the uncounted slots are read as position 0, id 0.
//
// Every value is checked against the model (token ids < vocab, segment ids <
// type_vocab, masks 0/1, positions < seq, labels 0/1, none negative): an
// error names the file, the sample (HDF5) or record (TFRecord), the feature
// and the value.
#pragma once

#include "training/data/DataError.h"
#include "training/data/HostBatch.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry::data {

// One file of samples with random access.
class SampleFile {
public:
  virtual ~SampleFile() = default;
  virtual const std::string &path() const = 0;
  virtual int64_t samples() const = 0;
  // Reads sample `index` into row `row` of `out` (sized by out.resize for
  // this file's seq and predictions) and sets its nspWeights entry to 1.
  // Throws DataError for bad data or an index past samples(). One thread at
  // a time per file (the reader reuses its buffers).
  virtual void read(int64_t index, HostBatch &out, int64_t row) = 0;
  // Whether the file holds packed rows (ferry-datagen --pack).
  virtual bool packedRows() { return false; }
  // A packed file's unpacked samples, counted from its sample_index (read
  // once, the first time: the whole dataset of an HDF5 file, every record
  // of a TFRecord file); -1 when the file is not packed or has no
  // sample_index. The dropout keys of packed rows use it.
  virtual int64_t packedSequences() { return -1; }
};

// Opens and validates the datasets' presence, shapes and types (HDF5) or
// indexes the records (TFRecord: one pass over the lengths and their CRCs).
std::unique_ptr<SampleFile> openHdf5(const std::string &path,
                                     const SampleShape &shape);
std::unique_ptr<SampleFile> openTfRecord(const std::string &path,
                                         const SampleShape &shape);
// Detects the format by content ("hdf5" by the HDF5 signature, "tfrecord"
// by a first record header whose length CRC checks) and opens the file.
// `format`: "auto", "hdf5" or "tfrecord".
std::unique_ptr<SampleFile> openSampleFile(const std::string &path,
                                           const std::string &format,
                                           const SampleShape &shape);

// data.path as a list of files, sorted by path: one file; a directory's
// regular files (not recursive, hidden files skipped); or a glob(3) pattern
// (a path with * ? or [ that does not exist as such; directories it matches
// are skipped). Throws DataError when the path does not exist, a directory
// has no files or a pattern matches none.
std::vector<std::string> expandDataPath(const std::string &path);

// Writers for tests and `ferry-datagen`: every row of `batch` as one sample.
// writeHdf5 writes int32 datasets in the layout above (no weights dataset:
// a row's counted slots must come first, as HostBatch guarantees);
// writeTfRecord writes one tf.Example record per row (int64_list for every
// integer feature, float_list for masked_lm_weights). Both write a temporary
// file beside `path` and rename it over `path`. Throw DataError when the file
// cannot be written, std::invalid_argument when the batch's fields have the
// wrong sizes or (writeHdf5) its weights disagree with the HDF5 rule.
// `progress`, when given, hears the fraction written so far (ferry-datagen's
// progress line).
void writeHdf5(const std::string &path, const HostBatch &batch,
               const std::function<void(double)> &progress = {});
void writeTfRecord(const std::string &path, const HostBatch &batch,
                   const std::function<void(double)> &progress = {});

// The samples of all files of data.path, in a fixed order per epoch.
class DataLoader {
public:
  // `seed`: the training seed (shuffling); rank/replicas: data parallelism.
  // Opens every file of expandDataPath(path) once, through openSampleFile
  // with `format`, concatenated in that (sorted) order. Throws DataError for
  // a bad file or when the files hold no samples, std::invalid_argument for
  // a rank outside [0, replicas) or a non-positive shape field.
  DataLoader(const std::string &path, const std::string &format, bool shuffle,
             uint64_t seed, const SampleShape &shape, int64_t rank = 0,
             int64_t replicas = 1);
  ~DataLoader(); // stops and joins the background reader
  DataLoader(const DataLoader &) = delete;
  DataLoader &operator=(const DataLoader &) = delete;

  int64_t samplesPerEpoch() const;
  const std::vector<std::string> &files() const;

  // Sample `position` of the run (counted from the start of training, over
  // epochs): epoch e = position / samplesPerEpoch(), index i = position %
  // samplesPerEpoch(); the sample is file-order sample i, or sample
  // permutation_e[i] when shuffling, where permutation_e is a Fisher-Yates
  // shuffle driven by the counter-based generator keyed by (seed, e): a pure
  // function, so a resumed run reads exactly what the uninterrupted one did.
  // Exactly, with n = samplesPerEpoch() and P = purposeHash("data.shuffle"):
  //   permutation = [0, 1, ..., n - 1]
  //   for i = n - 1 down to 1:
  //     j = randomBits(seed, P, /*layer*/ 0, /*sample*/ e, /*element*/ i)
  //         % (i + 1)
  //     swap(permutation[i], permutation[j])
  // (the modulo bias, at most n / 2^32 per draw, is irrelevant for a data
  // order).
  // Shuffling needs n < 2^32; only the current epoch's permutation is kept.
  //
  // Fills `out` (resized to globalCount / replicas rows) with this rank's
  // share of the samples [position, position + globalCount): rank r takes
  // rows [r * per, (r + 1) * per). globalCount must be a positive multiple
  // of replicas (std::invalid_argument otherwise). When (position,
  // globalCount) is the read ahead, the prefetched batch is swapped into
  // `out`; otherwise the read ahead, if any, is awaited and dropped and the
  // batch is read here. Then the batch (position + globalCount,
  // globalCount) is started on the background thread. An error of the
  // background read is rethrown by the call that asks for its batch.
  // One caller thread at a time.
  void next(int64_t position, int64_t globalCount, HostBatch &out);

  // Fills `out` (resized to `rows`) with file-order samples [first, first +
  // count) and zero rows (nspWeights 0) after them, without shuffling, rank
  // split or prefetch: evaluation sets. Waits for a read ahead in progress
  // and keeps it for next(). Throws DataError when first + count exceeds
  // samplesPerEpoch(), std::invalid_argument when count > rows.
  void readInOrder(int64_t first, int64_t count, int64_t rows, HostBatch &out);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace ferry::data
