// The NVIDIA/MLPerf HDF5 layout through the HDF5 C API: openHdf5 checks the
// six datasets' presence, integer types and shapes against the model, reads
// one sample at a time with a one-row hyperslab per dataset, and writeHdf5
// writes a batch as int32 datasets. Every HDF5 failure becomes a DataError
// naming the file and the dataset; HDF5's own printing to stderr is off.
#include "runtime/AtomicFile.h"
#include "training/data/MlperfData.h"

#include "training/data/IsolatedHelper.h"
#include "training/data/PackedRows.h"
#include "training/data/SampleChecks.h"

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>

namespace ferry::data {
namespace {

using detail::Field;

// Serialises ferry's HDF5 calls (the data loader's background thread and the
// caller's thread) whether or not the library was built thread-safe, and
// turns off HDF5's printing of errors, which is per thread.
std::recursive_mutex &hdf5Mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

// True in the helper process openInHelperFirst forks: it is
// single-threaded, and the mutex it inherited is held in the name of the
// parent's thread, which the helper is not, so it must not take it again.
bool inCheckingChild = false;

class Hdf5Lock {
public:
  Hdf5Lock() {
    if (!inCheckingChild)
      lock_ = std::unique_lock<std::recursive_mutex>(hdf5Mutex());
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }

private:
  std::unique_lock<std::recursive_mutex> lock_;
};

// The description of the innermost entries of HDF5's error stack, which is
// then cleared: "unable to open file; ...".
herr_t collectError(unsigned depth, const H5E_error2_t *error, void *data) {
  auto *text = static_cast<std::string *>(data);
  if (depth < 2 && error->desc && *error->desc) {
    if (!text->empty())
      *text += "; ";
    *text += error->desc;
  }
  return 0;
}

std::string hdf5Error() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collectError, &text);
  H5Eclear2(H5E_DEFAULT);
  return text.empty() ? "HDF5 reported an error" : "HDF5: " + text;
}

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Hid {
public:
  Hid() = default;
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Hid(Hid &&other) noexcept : id_(other.id_), close_(other.close_) {
    other.id_ = -1;
  }
  Hid &operator=(Hid &&other) noexcept {
    if (this != &other) {
      reset();
      id_ = other.id_;
      close_ = other.close_;
      other.id_ = -1;
    }
    return *this;
  }
  Hid(const Hid &) = delete;
  Hid &operator=(const Hid &) = delete;
  ~Hid() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now; returns false when HDF5 reports a failure.
  bool close() {
    if (id_ < 0)
      return true;
    Hdf5Lock lock;
    bool ok = close_(id_) >= 0;
    id_ = -1;
    return ok;
  }

private:
  void reset() {
    if (id_ >= 0) {
      Hdf5Lock lock;
      close_(id_);
      id_ = -1;
    }
  }
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

std::string shapeText(const std::vector<hsize_t> &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

// "float64", "string", ...: a type HDF5 holds where integers are expected.
std::string typeName(hid_t type) {
  size_t bits = H5Tget_size(type) * 8;
  switch (H5Tget_class(type)) {
  case H5T_INTEGER:
    return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") +
           std::to_string(bits);
  case H5T_FLOAT:
    return "float" + std::to_string(bits);
  case H5T_STRING:
    return "string";
  case H5T_BITFIELD:
    return "bitfield";
  case H5T_OPAQUE:
    return "opaque";
  case H5T_COMPOUND:
    return "compound";
  case H5T_REFERENCE:
    return "reference";
  case H5T_ENUM:
    return "enum";
  case H5T_VLEN:
    return "variable-length";
  case H5T_ARRAY:
    return "array";
  default:
    return "unknown-type";
  }
}

// The datasets of the layout, in the order they are checked and read.
enum class Width {
  Seq,         // [N, seq]
  Predictions, // [N, predictions]
  Sample,      // [N] (or [N, 1])
  Packs        // [N, K]: a packed file's NSP labels and sample indices
};
struct ColumnSpec {
  Field field;
  Width width;
};

// An unpacked file's datasets, or (packed) those with sequence_ids and K
// labels a row, and sample_index (written always; read when present: it
// keys the dropout of packed rows as the unpacked samples').
std::vector<ColumnSpec> columnsFor(bool packed, bool sampleIndex) {
  std::vector<ColumnSpec> columns = {
      {Field::InputIds, Width::Seq},
      {Field::InputMask, Width::Seq},
      {Field::SegmentIds, Width::Seq},
      {Field::MaskedPositions, Width::Predictions},
      {Field::MaskedIds, Width::Predictions},
      {Field::NspLabels, packed ? Width::Packs : Width::Sample}};
  if (packed)
    columns.push_back({Field::SequenceIds, Width::Seq});
  if (packed && sampleIndex)
    columns.push_back({Field::SampleIndex, Width::Packs});
  return columns;
}

std::vector<int32_t> &columnOf(HostBatch &batch, Field field) {
  switch (field) {
  case Field::InputIds:
    return batch.inputIds;
  case Field::InputMask:
    return batch.inputMask;
  case Field::SegmentIds:
    return batch.segmentIds;
  case Field::MaskedPositions:
    return batch.maskedPositions;
  case Field::MaskedIds:
    return batch.maskedIds;
  case Field::SequenceIds:
    return batch.sequenceIds;
  case Field::SampleIndex:
    return batch.sampleIndex;
  case Field::NspLabels:
    break;
  }
  return batch.nspLabels;
}

const std::vector<int32_t> &columnOf(const HostBatch &batch, Field field) {
  return columnOf(const_cast<HostBatch &>(batch), field);
}

class Hdf5File final : public SampleFile {
public:
  Hdf5File(const std::string &path, const SampleShape &shape)
      : path_(path), shape_(shape) {
    Hdf5Lock lock;
    file_ = Hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file_.valid())
      throw DataError(path + ": cannot open as an HDF5 file (" + hdf5Error() +
                      ")");
    // A packed file (ferry-datagen --pack) has sequence_ids.
    packed_ = H5Lexists(file_.get(), "sequence_ids", H5P_DEFAULT) > 0;
    H5Eclear2(H5E_DEFAULT);
    if (packed_ && shape_.packs == 1)
      throw DataError(
          path_ + ": holds packed rows (it has a sequence_ids dataset) but "
                  "the model takes one sequence a row; set "
                  "model.max_sequences_per_pack to the packing the data was "
                  "made with (the width of its next_sentence_labels), e.g. "
                  "--set model.max_sequences_per_pack=3");
    hasSampleIndex_ =
        packed_ && H5Lexists(file_.get(), "sample_index", H5P_DEFAULT) > 0;
    H5Eclear2(H5E_DEFAULT);
    specs_ = columnsFor(packed_, hasSampleIndex_);
    columns_.resize(specs_.size());
    const char *countedBy = nullptr;
    for (size_t c = 0; c < specs_.size(); ++c) {
      openColumn(c);
      if (c == 0) {
        samples_ = columns_[c].rows;
        countedBy = detail::fieldName(specs_[c].field);
      } else if (columns_[c].rows != samples_) {
        throw DataError(path_ + ": dataset " +
                        detail::fieldName(specs_[c].field) + " has " +
                        std::to_string(columns_[c].rows) + " samples but " +
                        countedBy + " has " + std::to_string(samples_) +
                        "; every dataset needs one row per sample");
      }
    }
  }

  const std::string &path() const override { return path_; }
  int64_t samples() const override { return samples_; }
  bool packedRows() override { return packed_; }

  int64_t packedSequences() override {
    if (!hasSampleIndex_)
      return -1;
    if (sequences_ < 0) {
      size_t c = 0;
      while (specs_[c].field != Field::SampleIndex)
        ++c;
      std::vector<int32_t> all(
          static_cast<size_t>(samples_ * columns_[c].width));
      Hdf5Lock lock;
      if (!all.empty() &&
          H5Dread(columns_[c].dataset.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL,
                  H5P_DEFAULT, all.data()) < 0)
        throw DataError(path_ + ": cannot read dataset sample_index (" +
                        hdf5Error() + ")");
      sequences_ = std::count_if(all.begin(), all.end(),
                                 [](int32_t v) { return v >= 0; });
    }
    return sequences_;
  }

  void read(int64_t index, HostBatch &out, int64_t row) override {
    if (index < 0 || index >= samples_)
      throw DataError(path_ + ": sample " + std::to_string(index) +
                      " requested; the file has " + std::to_string(samples_));
    if (row < 0 || row >= out.samples || out.seq != shape_.seq ||
        out.predictions != shape_.predictions || out.packs != shape_.packs)
      throw std::invalid_argument(
          path_ + ": read into a row or a batch shape that does not match");
    {
      Hdf5Lock lock;
      for (size_t c = 0; c < specs_.size(); ++c) {
        Column &column = columns_[c];
        // A [N] dataset takes only the first entry of start and count.
        hsize_t start[2] = {static_cast<hsize_t>(index), 0};
        hsize_t count[2] = {1, static_cast<hsize_t>(column.width)};
        // The NSP labels' and sample indices' row is packs wide; a file's
        // may be narrower (the rest: label 0, index -1).
        bool perPack = specs_[c].field == Field::NspLabels ||
                       specs_[c].field == Field::SampleIndex;
        int64_t rowWidth = perPack ? out.packs : column.width;
        if (specs_[c].width == Width::Packs)
          std::fill_n(columnOf(out, specs_[c].field).data() + row * rowWidth,
                      rowWidth, specs_[c].field == Field::SampleIndex ? -1 : 0);
        int32_t *target =
            columnOf(out, specs_[c].field).data() + row * rowWidth;
        if (H5Sselect_hyperslab(column.fileSpace.get(), H5S_SELECT_SET, start,
                                nullptr, count, nullptr) < 0 ||
            H5Dread(column.dataset.get(), H5T_NATIVE_INT32,
                    column.memorySpace.get(), column.fileSpace.get(),
                    H5P_DEFAULT, target) < 0)
          throw DataError(path_ + ": cannot read sample " +
                          std::to_string(index) + " of dataset " +
                          detail::fieldName(specs_[c].field) + " (" +
                          hdf5Error() + ")");
      }
    }
    // A slot counts when it lies before the first zero position; the slots
    // from there on are padding and become position 0, id 0, weight 0.
    int64_t p = shape_.predictions;
    int32_t *positions = out.maskedPositions.data() + row * p;
    int32_t *ids = out.maskedIds.data() + row * p;
    float *weights = out.maskedWeights.data() + row * p;
    bool counted = true;
    for (int64_t j = 0; j < p; ++j) {
      counted = counted && positions[j] != 0;
      weights[j] = counted ? 1.0f : 0.0f;
      if (!counted)
        positions[j] = ids[j] = 0;
    }
    std::string where = path_ + ": sample " + std::to_string(index);
    if (out.packs > 1 && !hasSampleIndex_)
      std::fill_n(out.sampleIndex.data() + row * out.packs, out.packs, -1);
    if (out.packs > 1)
      completePackedRow(where, out, row, packed_);
    else
      out.nspWeights[row] = 1.0f;
    detail::checkRow(where, out, row, shape_);
  }

private:
  struct Column {
    Hid dataset, fileSpace, memorySpace;
    int64_t rows = 0, width = 0;
  };

  // Lists the file's top-level names for an error message.
  std::string contents() {
    H5G_info_t info;
    if (H5Gget_info(file_.get(), &info) < 0)
      return "(cannot list: " + hdf5Error() + ")";
    std::string names;
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      char name[256] = {};
      if (H5Lget_name_by_idx(file_.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i,
                             name, sizeof name, H5P_DEFAULT) < 0)
        continue;
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
    return names.empty() ? "nothing" : names;
  }

  void openColumn(size_t c) {
    const ColumnSpec &spec = specs_[c];
    const char *name = detail::fieldName(spec.field);
    Column &column = columns_[c];
    htri_t exists = H5Lexists(file_.get(), name, H5P_DEFAULT);
    if (exists > 0)
      column.dataset = Hid(H5Dopen2(file_.get(), name, H5P_DEFAULT), H5Dclose);
    if (!column.dataset.valid()) {
      H5Eclear2(H5E_DEFAULT);
      throw DataError(path_ + ": has no dataset " + name + "; it has " +
                      contents() +
                      " (the MLPerf HDF5 layout needs input_ids, "
                      "input_mask, segment_ids, masked_lm_positions, "
                      "masked_lm_ids and next_sentence_labels)");
    }

    Hid type(H5Dget_type(column.dataset.get()), H5Tclose);
    if (!type.valid())
      throw DataError(path_ + ": dataset " + name + ": cannot read its type (" +
                      hdf5Error() + ")");
    if (H5Tget_class(type.get()) != H5T_INTEGER)
      throw DataError(path_ + ": dataset " + name + " holds " +
                      typeName(type.get()) +
                      " values; expected integers (any integer type)");
    // libhdf5 sizes its conversion buffers by the file's type: a damaged
    // type of gigabytes per integer would be allocated, not refused.
    size_t typeBytes = H5Tget_size(type.get());
    if (typeBytes == 0 || typeBytes > 8)
      throw DataError(path_ + ": dataset " + name + " holds " +
                      std::to_string(typeBytes) +
                      "-byte integers; expected 1 to 8 bytes (int8 to int64): "
                      "the file is damaged or not MLPerf data");

    column.fileSpace = Hid(H5Dget_space(column.dataset.get()), H5Sclose);
    int rank = column.fileSpace.valid()
                   ? H5Sget_simple_extent_ndims(column.fileSpace.get())
                   : -1;
    if (rank < 0)
      throw DataError(path_ + ": dataset " + name +
                      ": cannot read its shape (" + hdf5Error() + ")");
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    if (rank > 0)
      H5Sget_simple_extent_dims(column.fileSpace.get(), dims.data(), nullptr);

    std::string expected;
    bool fits;
    if (spec.width == Width::Sample) {
      column.width = 1;
      expected = "[N] (one label per sample)";
      fits = rank == 1 || (rank == 2 && dims[1] == 1);
    } else if (spec.width == Width::Packs) {
      column.width = rank == 2 ? static_cast<int64_t>(dims[1]) : 0;
      expected = "[N, K] with K from 1 to model.max_sequences_per_pack " +
                 std::to_string(shape_.packs) +
                 " (one label per packed sequence); set "
                 "model.max_sequences_per_pack to the data's packing";
      fits = rank == 2 && column.width >= 1 && column.width <= shape_.packs;
    } else {
      bool perPrediction = spec.width == Width::Predictions;
      column.width = perPrediction ? shape_.predictions : shape_.seq;
      expected =
          "[N, " + std::to_string(column.width) + "] (" +
          (perPrediction ? "model.max_predictions " : "model.seq_length ") +
          std::to_string(column.width) + ")";
      fits = rank == 2 && dims[1] == static_cast<hsize_t>(column.width);
    }
    if (!fits)
      throw DataError(path_ + ": dataset " + name + " has shape " +
                      shapeText(dims) + "; the model expects " + expected +
                      ": use data made for this model, or set the model's "
                      "lengths to the data's");
    column.rows = static_cast<int64_t>(dims[0]);
    checkStorage(column, name, rank, typeBytes);

    // The file-space selection is set per read; the memory side is one row.
    hsize_t rowDims[1] = {static_cast<hsize_t>(column.width)};
    column.memorySpace = Hid(H5Screate_simple(1, rowDims, nullptr), H5Sclose);
    if (!column.memorySpace.valid())
      throw DataError(path_ + ": dataset " + name + ": " + hdf5Error());
  }

  // Checks the dataset's storage before libhdf5 reads from it, for the
  // damaged layouts libhdf5 itself follows blindly (docs/reliability.md):
  // - a compact dataset keeps its values in its header; one whose buffer is
  //   shorter than its shape (even empty) makes H5Dread copy from a null or
  //   short buffer;
  // - a virtual dataset maps other files' datasets, which MLPerf data never
  //   does;
  // - libhdf5 reads a chunked dataset a whole chunk at a time: chunks larger
  //   than any MLPerf writer makes are refused before a read allocates one.
  void checkStorage(const Column &column, const char *name, int rank,
                    size_t typeBytes) {
    constexpr uint64_t kMaxChunkBytes = 256ull << 20;
    Hid plist(H5Dget_create_plist(column.dataset.get()), H5Pclose);
    if (!plist.valid())
      throw DataError(path_ + ": dataset " + name +
                      ": cannot read its storage layout (" + hdf5Error() + ")");
    H5D_layout_t layout = H5Pget_layout(plist.get());
    if (layout == H5D_COMPACT) {
      unsigned __int128 needed = static_cast<unsigned __int128>(typeBytes) *
                                 static_cast<uint64_t>(column.rows) *
                                 static_cast<uint64_t>(column.width);
      hsize_t held = H5Dget_storage_size(column.dataset.get());
      if (held < needed)
        throw DataError(
            path_ + ": dataset " + name + " is stored compact with " +
            std::to_string(held) + " bytes but its shape needs " +
            std::to_string(static_cast<uint64_t>(needed)) +
            "; the file is damaged. Rewrite it (ferry-datagen, or h5repack "
            "-l CONTI IN OUT from a good copy)");
      return;
    }
    if (layout == H5D_CONTIGUOUS)
      return;
    if (layout != H5D_CHUNKED)
      throw DataError(path_ + ": dataset " + name + " has storage layout " +
                      std::to_string(static_cast<int>(layout)) +
                      " (virtual or unknown); ferry reads compact, contiguous "
                      "and chunked datasets. Rewrite it with h5repack -l "
                      "CONTI IN OUT");
    hsize_t chunk[2] = {0, 0};
    if (H5Pget_chunk(plist.get(), rank, chunk) != rank)
      throw DataError(path_ + ": dataset " + name +
                      ": cannot read its chunk shape (" + hdf5Error() + ")");
    unsigned __int128 bytes = typeBytes;
    for (int d = 0; d < rank; ++d)
      bytes *= chunk[d];
    if (bytes > kMaxChunkBytes)
      throw DataError(path_ + ": dataset " + name + " is stored in chunks of " +
                      shapeText({chunk, chunk + rank}) + " (" +
                      std::to_string(static_cast<uint64_t>(
                          std::min<unsigned __int128>(bytes, UINT64_MAX))) +
                      " bytes); ferry reads chunks of at most 256 MiB. Rewrite "
                      "it with smaller chunks, e.g. h5repack -l CHUNK=1024x" +
                      std::to_string(column.width) + " IN OUT");
  }

  std::string path_;
  SampleShape shape_;
  int64_t samples_ = 0;
  Hid file_;
  bool packed_ = false; // the file has sequence_ids
  bool hasSampleIndex_ = false;
  int64_t sequences_ = -1; // packedSequences(), once counted
  std::vector<ColumnSpec> specs_;
  std::vector<Column> columns_;
};

// Debian's libhdf5 (1.10) follows some damaged metadata (symbol-table
// B-tree nodes, heaps) into wild reads and crashes the process; the fuzz
// target found such files (docs/reliability.md), and nothing ferry can check
// before calling libhdf5 tells them apart short of parsing HDF5 itself. So
// each file is first opened in a helper process (IsolatedHelper.h) that does
// everything the reader does with the metadata and reads the first and the
// last sample; a helper killed by a signal becomes an error naming the
// file, and the process that trains never meets the fault. A DataError in
// the helper is ignored there: the caller then meets it itself and reports
// it as usual.
void checkInHelper(const std::string &request) {
  inCheckingChild = true;
  SampleShape shape;
  std::memcpy(&shape, request.data(), sizeof shape);
  std::string path = request.substr(sizeof shape);
  Hdf5File file(path, shape);
  HostBatch batch;
  batch.resize(1, shape.seq, shape.predictions, shape.packs);
  if (file.samples() > 0) {
    file.read(0, batch, 0);
    file.read(file.samples() - 1, batch, 0);
  }
}

void openInHelperFirst(const std::string &path, const SampleShape &shape) {
  static IsolatedHelper helper(checkInHelper);
  // No other thread is inside libhdf5 while the helper is made or works.
  Hdf5Lock lock;
  std::string request(sizeof shape, '\0');
  std::memcpy(request.data(), &shape, sizeof shape);
  request += path;
  if (std::optional<std::string> death = helper.run(request))
    throw DataError(path + ": libhdf5 crashed reading it (" + *death +
                    "): the file is damaged. Make it again (ferry-datagen, or "
                    "the MLPerf preprocessing) or copy it again");
}

} // namespace

std::unique_ptr<SampleFile> openHdf5(const std::string &path,
                                     const SampleShape &shape) {
  openInHelperFirst(path, shape);
  return std::make_unique<Hdf5File>(path, shape);
}

void writeHdf5(const std::string &path, const HostBatch &batch,
               const std::function<void(double)> &progress) {
  detail::checkBatchLayout("writeHdf5", batch);
  // There is no weights dataset: a slot counts exactly when it lies before
  // the first zero position, so the batch must say the same.
  for (int64_t r = 0; r < batch.samples; ++r) {
    bool counted = true;
    for (int64_t j = 0; j < batch.predictions; ++j) {
      int64_t at = r * batch.predictions + j;
      counted = counted && batch.maskedPositions[at] != 0;
      if (batch.maskedWeights[at] != (counted ? 1.0f : 0.0f))
        throw std::invalid_argument(
            "writeHdf5 " + path + ": row " + std::to_string(r) + " slot " +
            std::to_string(j) + " has position " +
            std::to_string(batch.maskedPositions[at]) + " and weight " +
            std::to_string(batch.maskedWeights[at]) +
            "; HDF5 counts exactly the slots before the first zero position");
    }
  }

  std::string temp = path + ".tmp";
  auto fail = [&](const std::string &what) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw DataError(path + ": cannot write (" + what + ")");
  };
  if (std::optional<std::string> error = createParentDirectories(path))
    throw DataError(*error);
  {
    Hdf5Lock lock;
    Hid file(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
             H5Fclose);
    if (!file.valid())
      fail("creating " + temp + ": " + hdf5Error());
    // No modification times in the object headers: the same samples give
    // the same bytes (ferry-datagen is deterministic for a seed).
    Hid create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (!create.valid() || H5Pset_obj_track_times(create.get(), 0) < 0)
      fail("a dataset creation property list: " + hdf5Error());
    std::vector<ColumnSpec> specs =
        columnsFor(batch.packs > 1, /*sampleIndex=*/true);
    for (const ColumnSpec &spec : specs) {
      const char *name = detail::fieldName(spec.field);
      hsize_t width = spec.width == Width::Sample        ? 1
                      : spec.width == Width::Packs       ? batch.packs
                      : spec.width == Width::Predictions ? batch.predictions
                                                         : batch.seq;
      hsize_t dims[2] = {static_cast<hsize_t>(batch.samples), width};
      Hid space(
          H5Screate_simple(spec.width == Width::Sample ? 1 : 2, dims, nullptr),
          H5Sclose);
      Hid dataset;
      if (space.valid())
        dataset = Hid(H5Dcreate2(file.get(), name, H5T_STD_I32LE, space.get(),
                                 H5P_DEFAULT, create.get(), H5P_DEFAULT),
                      H5Dclose);
      if (!dataset.valid())
        fail(std::string("creating dataset ") + name + ": " + hdf5Error());
      if (batch.samples > 0 &&
          H5Dwrite(dataset.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL,
                   H5P_DEFAULT, columnOf(batch, spec.field).data()) < 0)
        fail(std::string("writing dataset ") + name + ": " + hdf5Error());
      if (!dataset.close())
        fail(std::string("closing dataset ") + name + ": " + hdf5Error());
      if (progress)
        progress(static_cast<double>(&spec - specs.data() + 1) /
                 static_cast<double>(specs.size()));
    }
    if (!file.close())
      fail("closing " + temp + ": " + hdf5Error());
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  if (error)
    fail("renaming " + temp + " to it: " + error.message());
}

} // namespace ferry::data
