// TFRecord files of tf.Example records as the MLPerf BERT reference writes
// them: openTfRecord indexes the records in one pass over their headers
// (checking each length's CRC), read() checks the data's CRC, parses the
// tf.Example with the protobuf code generated from tf_example.proto and
// checks every feature's kind, length and values; writeTfRecord writes one
// record per row of a batch.
#include "training/data/MlperfData.h"

#include "runtime/AtomicFile.h"
#include "training/data/Crc32c.h"
#include "training/data/PackedRows.h"
#include "training/data/SampleChecks.h"
#include "training/data/tf_example.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ferry::data {
namespace {

using detail::Field;

// Record framing: uint64 length, uint32 masked CRC of the length, data,
// uint32 masked CRC of the data, all little-endian.
constexpr uint64_t kHeaderBytes = 12;
constexpr uint64_t kFooterBytes = 4;

uint64_t loadLittle(const unsigned char *bytes, int count) {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i)
    value |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  return value;
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

// Owns a file descriptor.
class Fd {
public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const { return fd_; }

private:
  int fd_;
};

class TfRecordFile final : public SampleFile {
public:
  TfRecordFile(const std::string &path, const SampleShape &shape)
      : path_(path), shape_(shape), fd_(::open(path.c_str(), O_RDONLY)) {
    if (fd_.get() < 0)
      throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
    struct stat info;
    if (::fstat(fd_.get(), &info) != 0)
      throw DataError(path + ": cannot stat (" + std::strerror(errno) + ")");
    uint64_t size = static_cast<uint64_t>(info.st_size);
    uint64_t offset = 0;
    while (offset < size) {
      std::string where = path_ + ": record " +
                          std::to_string(records_.size()) + " at byte " +
                          std::to_string(offset);
      if (size - offset < kHeaderBytes)
        throw DataError(where + ": the file ends inside the record's " +
                        "12-byte header (" + std::to_string(size - offset) +
                        " bytes left); the file is truncated");
      unsigned char header[kHeaderBytes];
      readAt(header, kHeaderBytes, offset, where);
      uint64_t length = loadLittle(header, 8);
      uint32_t stored = static_cast<uint32_t>(loadLittle(header + 8, 4));
      uint32_t computed = maskCrc32c(crc32c(header, 8));
      if (stored != computed)
        throw DataError(where +
                        ": the length's CRC32C does not match (stored " +
                        hex(stored) + ", computed " + hex(computed) +
                        "); the file is corrupt or not a TFRecord file: make "
                        "it again or copy "
                        "it again");
      uint64_t left = size - offset - kHeaderBytes;
      if (length > left || left - length < kFooterBytes)
        throw DataError(where + ": the record needs " +
                        std::to_string(length + kFooterBytes) +
                        " bytes after its header but the file has " +
                        std::to_string(left) + "; the file is truncated");
      records_.push_back({offset + kHeaderBytes, length});
      offset += kHeaderBytes + length + kFooterBytes;
    }
  }

  const std::string &path() const override { return path_; }
  int64_t samples() const override {
    return static_cast<int64_t>(records_.size());
  }

  // Packed when the first record has sequence_ids.
  bool packedRows() override {
    if (records_.empty())
      return false;
    load(0);
    return example_.features().feature().count(
               detail::fieldName(Field::SequenceIds)) > 0;
  }

  // Every record parsed once: the sample indices that are not -1.
  int64_t packedSequences() override {
    if (sequences_ >= 0 || sequences_ == -2)
      return sequences_ == -2 ? -1 : sequences_;
    int64_t count = 0;
    const char *name = detail::fieldName(Field::SampleIndex);
    for (int64_t i = 0; i < samples(); ++i) {
      load(i);
      auto it = example_.features().feature().find(name);
      if (it == example_.features().feature().end()) {
        sequences_ = -2; // not packed, or no sample_index: unknown
        return -1;
      }
      for (int64_t v : it->second.int64_list().value())
        count += v >= 0;
    }
    sequences_ = count;
    return count;
  }

  void read(int64_t index, HostBatch &out, int64_t row) override {
    if (index < 0 || index >= samples())
      throw DataError(path_ + ": record " + std::to_string(index) +
                      " requested; the file has " + std::to_string(samples()));
    if (row < 0 || row >= out.samples || out.seq != shape_.seq ||
        out.predictions != shape_.predictions || out.packs != shape_.packs)
      throw std::invalid_argument(
          path_ + ": read into a row or a batch shape that does not match");
    std::string where = load(index);

    int64_t seq = shape_.seq, p = shape_.predictions;
    copyInts(where, Field::InputIds, seq, "model.seq_length",
             out.inputIds.data() + row * seq);
    copyInts(where, Field::InputMask, seq, "model.seq_length",
             out.inputMask.data() + row * seq);
    copyInts(where, Field::SegmentIds, seq, "model.seq_length",
             out.segmentIds.data() + row * seq);
    copyInts(where, Field::MaskedPositions, p, "model.max_predictions",
             out.maskedPositions.data() + row * p);
    copyInts(where, Field::MaskedIds, p, "model.max_predictions",
             out.maskedIds.data() + row * p);
    // A packed record (ferry-datagen --pack) has sequence_ids and one NSP
    // label per sequence.
    bool packed = example_.features().feature().count(
                      detail::fieldName(Field::SequenceIds)) > 0;
    if (packed && shape_.packs == 1)
      throw DataError(where + ": holds a packed row (it has a sequence_ids "
                              "feature) but the model takes one sequence a "
                              "row; set model.max_sequences_per_pack to the "
                              "packing the data was made with (the length of "
                              "its next_sentence_labels), e.g. --set "
                              "model.max_sequences_per_pack=3");
    int32_t *labels = out.nspLabels.data() + row * out.packs;
    if (packed) {
      copyInts(where, Field::SequenceIds, seq, "model.seq_length",
               out.sequenceIds.data() + row * seq);
      const char *name = detail::fieldName(Field::NspLabels);
      const tf::Feature &found = feature(where, name);
      expectKind(where, name, found, tf::Feature::kInt64List, out.packs,
                 "model.max_sequences_per_pack");
      int64_t count = found.int64_list().value_size();
      if (count < 1 || count > out.packs)
        throw DataError(where + ": " + name + " holds " +
                        std::to_string(count) +
                        " values; expected 1 to model.max_sequences_per_pack " +
                        std::to_string(out.packs) +
                        " (one per packed sequence): set "
                        "model.max_sequences_per_pack to the data's packing");
      copyInts(where, Field::NspLabels, count, nullptr, labels);
      int32_t *indices = out.sampleIndex.data() + row * out.packs;
      std::fill_n(indices, out.packs, -1);
      const char *indexName = detail::fieldName(Field::SampleIndex);
      if (example_.features().feature().count(indexName) > 0) {
        const tf::Feature &index = feature(where, indexName);
        expectKind(where, indexName, index, tf::Feature::kInt64List, out.packs,
                   "model.max_sequences_per_pack");
        int64_t width = index.int64_list().value_size();
        if (width > out.packs)
          throw DataError(where + ": " + indexName + " holds " +
                          std::to_string(width) +
                          " values; expected at most "
                          "model.max_sequences_per_pack " +
                          std::to_string(out.packs));
        copyInts(where, Field::SampleIndex, width, nullptr, indices);
      }
    } else {
      copyInts(where, Field::NspLabels, 1, nullptr, labels);
      if (out.packs > 1)
        std::fill_n(out.sampleIndex.data() + row * out.packs, out.packs, -1);
    }

    const tf::Feature &weights = feature(where, "masked_lm_weights");
    expectKind(where, "masked_lm_weights", weights, tf::Feature::kFloatList, p,
               "model.max_predictions");
    expectLength(where, "masked_lm_weights", weights.float_list().value_size(),
                 p, "model.max_predictions");
    // A slot counts when its weight is 1; the uncounted ones (all at the
    // end) become position 0, id 0 as HostBatch promises.
    bool sawZero = false;
    for (int64_t j = 0; j < p; ++j) {
      float weight = weights.float_list().value(static_cast<int>(j));
      detail::checkWeight(where, j, weight, sawZero);
      out.maskedWeights[row * p + j] = weight;
      if (weight == 0.0f)
        out.maskedPositions[row * p + j] = out.maskedIds[row * p + j] = 0;
    }
    if (out.packs > 1)
      completePackedRow(where, out, row, packed);
    else
      out.nspWeights[row] = 1.0f;
  }

private:
  struct Record {
    uint64_t offset; // of the data
    uint64_t length;
  };

  // Reads record `index` into example_ (its CRC checked); returns where it
  // is, for messages.
  std::string load(int64_t index) {
    const Record &record = records_[static_cast<size_t>(index)];
    std::string where = path_ + ": record " + std::to_string(index);

    buffer_.resize(record.length + kFooterBytes);
    readAt(buffer_.data(), buffer_.size(), record.offset, where);
    auto *footer =
        reinterpret_cast<const unsigned char *>(buffer_.data()) + record.length;
    uint32_t stored = static_cast<uint32_t>(loadLittle(footer, 4));
    uint32_t computed = maskCrc32c(crc32c(buffer_.data(), record.length));
    if (stored != computed)
      throw DataError(where + " (byte " +
                      std::to_string(record.offset - kHeaderBytes) +
                      "): the data's CRC32C does not match (stored " +
                      hex(stored) + ", computed " + hex(computed) +
                      "); the file is corrupt: make it again or copy it again");
    if (!example_.ParseFromArray(buffer_.data(),
                                 static_cast<int>(record.length)))
      throw DataError(where + ": the record is not a tf.Example protobuf");
    return where;
  }

  void readAt(void *target, size_t count, uint64_t offset,
              const std::string &where) {
    auto *bytes = static_cast<char *>(target);
    size_t done = 0;
    while (done < count) {
      ssize_t got = ::pread(fd_.get(), bytes + done, count - done,
                            static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0)
        throw DataError(where + ": cannot read (" + std::strerror(errno) + ")");
      if (got == 0)
        throw DataError(where + ": the file ended early (it changed after "
                                "it was opened?)");
      done += static_cast<size_t>(got);
    }
  }

  const tf::Feature &feature(const std::string &where, const char *name) {
    const auto &features = example_.features().feature();
    auto it = features.find(name);
    if (it != features.end())
      return it->second;
    std::vector<std::string> names;
    for (const auto &entry : features)
      names.push_back(entry.first);
    std::sort(names.begin(), names.end());
    std::string list;
    for (const std::string &present : names)
      list += (list.empty() ? "" : ", ") + present;
    throw DataError(where + ": has no feature " + name + "; it has " +
                    (list.empty() ? std::string("none") : list) +
                    " (MLPerf BERT records need input_ids, input_mask, "
                    "segment_ids, masked_lm_positions, masked_lm_ids, "
                    "masked_lm_weights and next_sentence_labels)");
  }

  static const char *kindName(const tf::Feature &feature) {
    switch (feature.kind_case()) {
    case tf::Feature::kBytesList:
      return "a bytes_list";
    case tf::Feature::kFloatList:
      return "a float_list";
    case tf::Feature::kInt64List:
      return "an int64_list";
    default:
      return "empty (no value list)";
    }
  }

  static void expectKind(const std::string &where, const char *name,
                         const tf::Feature &feature, tf::Feature::KindCase kind,
                         int64_t length, const char *setting) {
    if (feature.kind_case() == kind)
      return;
    std::string expected =
        kind == tf::Feature::kFloatList ? "a float_list" : "an int64_list";
    throw DataError(
        where + ": feature " + name + " is " + kindName(feature) +
        "; expected " + expected + " of " + std::to_string(length) + " values" +
        (setting
             ? std::string(" (") + setting + " " + std::to_string(length) + ")"
             : std::string()));
  }

  static void expectLength(const std::string &where, const char *name,
                           int found, int64_t length, const char *setting) {
    if (found == length)
      return;
    throw DataError(
        where + ": feature " + name + " has " + std::to_string(found) +
        " values; the model expects " + std::to_string(length) +
        (setting ? std::string(" (") + setting + " " + std::to_string(length) +
                       "): use data made for this model, or set " + setting +
                       " to the data's"
                 : std::string()));
  }

  // Checks the int64_list feature `field` (kind, length, every value before
  // it is narrowed) and copies it to `target`.
  void copyInts(const std::string &where, Field field, int64_t length,
                const char *setting, int32_t *target) {
    const char *name = detail::fieldName(field);
    const tf::Feature &found = feature(where, name);
    expectKind(where, name, found, tf::Feature::kInt64List, length, setting);
    const auto &values = found.int64_list().value();
    expectLength(where, name, values.size(), length, setting);
    for (int64_t j = 0; j < length; ++j) {
      int64_t value = values.Get(static_cast<int>(j));
      detail::checkValue(where, field, j, value, shape_);
      target[j] = static_cast<int32_t>(value);
    }
  }

  std::string path_;
  SampleShape shape_;
  Fd fd_;
  std::vector<Record> records_;
  std::string buffer_;
  tf::Example example_;
  int64_t sequences_ = -1; // packedSequences(): -1 not yet, -2 unknown
};

} // namespace

std::unique_ptr<SampleFile> openTfRecord(const std::string &path,
                                         const SampleShape &shape) {
  return std::make_unique<TfRecordFile>(path, shape);
}

void writeTfRecord(const std::string &path, const HostBatch &batch,
                   const std::function<void(double)> &progress) {
  detail::checkBatchLayout("writeTfRecord", batch);
  std::string file, data;
  tf::Example example;
  for (int64_t r = 0; r < batch.samples; ++r) {
    example.Clear();
    auto &features = *example.mutable_features()->mutable_feature();
    auto addInts = [&](Field field, const std::vector<int32_t> &values,
                       int64_t width) {
      auto *list = features[detail::fieldName(field)].mutable_int64_list();
      for (int64_t j = 0; j < width; ++j)
        list->add_value(values[static_cast<size_t>(r * width + j)]);
    };
    addInts(Field::InputIds, batch.inputIds, batch.seq);
    addInts(Field::InputMask, batch.inputMask, batch.seq);
    addInts(Field::SegmentIds, batch.segmentIds, batch.seq);
    addInts(Field::MaskedPositions, batch.maskedPositions, batch.predictions);
    addInts(Field::MaskedIds, batch.maskedIds, batch.predictions);
    addInts(Field::NspLabels, batch.nspLabels, batch.packs);
    if (batch.packs > 1) {
      addInts(Field::SequenceIds, batch.sequenceIds, batch.seq);
      addInts(Field::SampleIndex, batch.sampleIndex, batch.packs);
    }
    auto *weights = features["masked_lm_weights"].mutable_float_list();
    for (int64_t j = 0; j < batch.predictions; ++j)
      weights->add_value(batch.maskedWeights[r * batch.predictions + j]);

    // Deterministic: the map's entries in key order, so the same batch
    // always gives the same bytes.
    data.clear();
    {
      google::protobuf::io::StringOutputStream stream(&data);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      if (!example.SerializeToCodedStream(&coded))
        throw DataError(path + ": cannot serialise record " +
                        std::to_string(r));
    }
    appendTfRecord(file, data);
    // Encoding is most of the work; the file write is the last 10%.
    if (progress)
      progress(0.9 * static_cast<double>(r + 1) / batch.samples);
  }
  auto written = [&](size_t bytes) {
    if (progress)
      progress(0.9 + 0.1 * static_cast<double>(bytes) /
                         std::max<size_t>(file.size(), 1));
  };
  if (auto error = writeFileAtomically(path, file, written))
    throw DataError(*error);
}

} // namespace ferry::data
