// DataLoader: the files of data.path opened once and concatenated in path
// order, the per-epoch shuffle (a pure function of seed and epoch), the
// rank's share of each global batch, and one background thread that reads
// the next batch while the current one computes.
#include "training/data/MlperfData.h"

#include "training/data/PackedRows.h"
#include "runtime/random/Philox.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

namespace ferry::data {

struct DataLoader::Impl {
  std::vector<std::string> paths;
  std::vector<std::unique_ptr<SampleFile>> files;
  std::vector<int64_t> firsts; // file-order index of each file's sample 0
  int64_t total = 0;
  SampleShape shape;
  // packs > 1 (countSequences): per file whether it is packed, its
  // unpacked samples (-1: unknown) and those of the files before it.
  std::vector<char> filePacked;
  std::vector<int64_t> sequenceCounts, sequenceFirsts;
  int64_t totalSequences = 0;
  bool shuffle = false;
  uint64_t seed = 0;
  int64_t rank = 0, replicas = 1;

  // Touched only by the one thread reading (see the protocol below).
  int64_t permutationEpoch = -1;
  std::vector<uint32_t> permutation;

  // Read-ahead protocol: the caller's thread reads only while the worker
  // is idle (no request queued, none being read), and the worker reads only
  // a request the caller queued, so the files and the permutation are never
  // used by two threads at once.
  std::mutex mutex;
  std::condition_variable changed;
  bool stop = false;
  bool requested = false; // a request is queued
  bool busy = false;      // the worker is reading one
  int64_t requestPosition = 0, requestCount = 0;
  bool ready = false; // a finished read ahead, batch or error
  int64_t readyPosition = 0, readyCount = 0;
  HostBatch readyBatch;
  std::exception_ptr readyError;
  std::thread worker;

  const std::vector<uint32_t> &permutationFor(int64_t epoch) {
    if (permutationEpoch == epoch)
      return permutation;
    // Fisher-Yates, documented in MlperfData.h.
    permutation = random::shuffled(static_cast<uint32_t>(total), seed,
                                   random::purposeHash("data.shuffle"),
                                   static_cast<uint64_t>(epoch));
    permutationEpoch = epoch;
    return permutation;
  }

  // File-order sample `index` into row `row`, read at run position `at`
  // (the dropout keys of packed rows).
  void readSample(int64_t index, HostBatch &out, int64_t row, int64_t at) {
    auto after = std::upper_bound(firsts.begin(), firsts.end(), index);
    size_t file = static_cast<size_t>(after - firsts.begin()) - 1;
    files[file]->read(index - firsts[file], out, row);
    if (out.packs > 1)
      setKeys(file, out, row, at);
  }

  // Packed rows' dropout keys (DropoutKeys.h), so that their masks are the
  // unpacked samples': a sequence of a packed file with a sample_index
  // takes epoch x (the files' unpacked samples) + the unpacked samples of
  // the files before its own + its sample_index, what the unpacked files
  // read in order give that sample; a row of an unpacked file takes its
  // run position, as the unpacked model keys it. (A packed file without
  // sample_index: position x packs + sequence, masks of their own.)
  void setKeys(size_t file, HostBatch &out, int64_t row, int64_t at) {
    const int64_t packs = out.packs, epoch = at / total;
    std::vector<uint32_t> keys(static_cast<size_t>(packs));
    for (int64_t j = 0; j < packs; ++j) {
      int32_t index = out.sampleIndex[static_cast<size_t>(row * packs + j)];
      int64_t key = !filePacked[file] ? at
                    : index >= 0 && sequenceCounts[file] >= 0
                        ? epoch * totalSequences + sequenceFirsts[file] + index
                        : at * packs + j;
      keys[static_cast<size_t>(j)] = static_cast<uint32_t>(key);
    }
    setDropoutKeys(out, row, keys);
  }

  // packs > 1: which files are packed and their unpacked samples.
  void countSequences() {
    int64_t first = 0;
    for (auto &file : files) {
      filePacked.push_back(file->packedRows());
      int64_t count = filePacked.back() ? file->packedSequences() : -1;
      sequenceCounts.push_back(count);
      sequenceFirsts.push_back(first);
      first += count >= 0 ? count : file->samples();
    }
    totalSequences = first;
  }

  // This rank's share of the samples [position, position + globalCount).
  void readShare(int64_t position, int64_t globalCount, HostBatch &out) {
    int64_t per = globalCount / replicas;
    out.resize(per, shape.seq, shape.predictions, shape.packs);
    for (int64_t k = 0; k < per; ++k) {
      int64_t at = position + rank * per + k;
      int64_t epoch = at / total, index = at % total;
      if (shuffle)
        index = permutationFor(epoch)[static_cast<size_t>(index)];
      readSample(index, out, k, at);
    }
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return stop || requested; });
      if (stop)
        return;
      int64_t position = requestPosition, count = requestCount;
      requested = false;
      busy = true;
      HostBatch batch = std::move(readyBatch);
      ready = false;
      lock.unlock();
      std::exception_ptr error;
      try {
        readShare(position, count, batch);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      readyBatch = std::move(batch);
      readyError = error;
      readyPosition = position;
      readyCount = count;
      ready = true;
      busy = false;
      changed.notify_all();
    }
  }

  // Waits until the worker has finished what was queued; the caller may
  // then read the files itself.
  void waitIdle(std::unique_lock<std::mutex> &lock) {
    changed.wait(lock, [&] { return !requested && !busy; });
  }
};

DataLoader::DataLoader(const std::string &path, const std::string &format,
                       bool shuffle, uint64_t seed, const SampleShape &shape,
                       int64_t rank, int64_t replicas)
    : impl_(std::make_unique<Impl>()) {
  if (replicas < 1 || rank < 0 || rank >= replicas)
    throw std::invalid_argument("DataLoader: rank " + std::to_string(rank) +
                                " of " + std::to_string(replicas) +
                                " replicas");
  if (shape.seq <= 0 || shape.predictions <= 0 || shape.vocab <= 0 ||
      shape.typeVocab <= 0 || shape.packs <= 0)
    throw std::invalid_argument("DataLoader: the sample shape needs positive "
                                "seq, predictions, vocab and typeVocab");
  Impl &impl = *impl_;
  impl.shape = shape;
  impl.shuffle = shuffle;
  impl.seed = seed;
  impl.rank = rank;
  impl.replicas = replicas;
  impl.paths = expandDataPath(path);
  for (const std::string &file : impl.paths) {
    impl.files.push_back(openSampleFile(file, format, shape));
    impl.firsts.push_back(impl.total);
    impl.total += impl.files.back()->samples();
  }
  if (shape.packs > 1)
    impl.countSequences();
  if (impl.total == 0)
    throw DataError("data.path '" + path + "': its " +
                    std::to_string(impl.paths.size()) +
                    " file(s) hold no samples");
  if (shuffle &&
      impl.total > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
    throw DataError("data.path '" + path + "' holds " +
                    std::to_string(impl.total) +
                    " samples; shuffling supports at most 2^32 - 1");
  impl.worker = std::thread([this] { impl_->run(); });
}

DataLoader::~DataLoader() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->changed.notify_all();
  impl_->worker.join();
}

int64_t DataLoader::samplesPerEpoch() const { return impl_->total; }

const std::vector<std::string> &DataLoader::files() const {
  return impl_->paths;
}

void DataLoader::next(int64_t position, int64_t globalCount, HostBatch &out) {
  Impl &impl = *impl_;
  if (position < 0 || globalCount <= 0 || globalCount % impl.replicas != 0)
    throw std::invalid_argument(
        "DataLoader::next: position " + std::to_string(position) + ", batch " +
        std::to_string(globalCount) + " over " + std::to_string(impl.replicas) +
        " replicas (the batch must be a positive multiple of the replicas)");
  std::unique_lock<std::mutex> lock(impl.mutex);
  impl.waitIdle(lock);
  bool hit = impl.ready && impl.readyPosition == position &&
             impl.readyCount == globalCount;
  impl.ready = false;
  if (hit) {
    if (impl.readyError) {
      std::exception_ptr error = std::exchange(impl.readyError, nullptr);
      std::rethrow_exception(error);
    }
    std::swap(out, impl.readyBatch);
  } else {
    impl.readyError = nullptr;
    lock.unlock();
    impl.readShare(position, globalCount, out);
    lock.lock();
  }
  impl.requestPosition = position + globalCount;
  impl.requestCount = globalCount;
  impl.requested = true;
  impl.changed.notify_all();
}

void DataLoader::readInOrder(int64_t first, int64_t count, int64_t rows,
                             HostBatch &out) {
  Impl &impl = *impl_;
  if (first < 0 || count < 0 || count > rows)
    throw std::invalid_argument(
        "DataLoader::readInOrder: " + std::to_string(count) + " samples from " +
        std::to_string(first) + " into " + std::to_string(rows) + " rows");
  if (first + count > impl.total)
    throw DataError("data.path: samples [" + std::to_string(first) + ", " +
                    std::to_string(first + count) +
                    ") requested but the files hold " +
                    std::to_string(impl.total) + " samples");
  std::unique_lock<std::mutex> lock(impl.mutex);
  impl.waitIdle(lock); // keeps a finished read ahead for next()
  out.resize(rows, impl.shape.seq, impl.shape.predictions, impl.shape.packs);
  for (int64_t k = 0; k < count; ++k)
    impl.readSample(first + k, out, k, first + k);
}

} // namespace ferry::data
