// The safetensors format (https://github.com/huggingface/safetensors), read
// and written by ferry's own code: an 8-byte little-endian header length N,
// N bytes of JSON header ({"name": {"dtype", "shape", "data_offsets": [b, e]},
// ..., "__metadata__": {string: string}}), then the data section. Hand-written
// because the format is a page long and Debian has no C++ library for it;
// nlohmann-json parses the header.
//
// Files ferry writes carry "ferry.format_version" and "ferry.xxh64" (the
// xxHash64 of the data section, 16 hex digits) in __metadata__; a reader
// verifies the checksum when it is present, so a truncated or corrupted
// checkpoint is refused with a message instead of loading garbage. Files
// from elsewhere (Hugging Face) have no checksum and are checked for
// structure only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry::ckpt {

// A checkpoint the user must fix: the message names the file, the tensor
// (when there is one), what was found and what was expected.
class CheckpointError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

enum class DType { F32, F16, BF16, I32, I64 };

// "F32", "F16", "BF16", "I32", "I64".
const char *dtypeName(DType dtype);
size_t dtypeSize(DType dtype);

struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<char> data; // little-endian, row-major, product(shape) elements

  int64_t elements() const;
  // The values as fp32 (F16 and BF16 widened exactly; I32/I64 converted).
  std::vector<float> toFloat32() const;
};

// An fp32 tensor converted to `dtype` (BF16 and F16 rounded to nearest even;
// I32/I64 truncated toward zero). `values` holds product(shape) floats and may
// be null when that is 0. Throws CheckpointError naming the tensor for a
// negative or too large shape, and for a NaN, infinite or out-of-range value
// converted to I32/I64.
Tensor makeTensor(std::string name, std::vector<int64_t> shape,
                  const float *values, DType dtype = DType::F32);

struct SafetensorsFile {
  std::string path;
  std::map<std::string, std::string> metadata;
  std::vector<Tensor> tensors; // in data-offset order

  // nullptr when absent.
  const Tensor *find(const std::string &name) const;
};

// Reads and validates a whole file: header length within the file, JSON
// well formed, every entry with a known dtype, non-negative shape and
// data_offsets inside the data section matching product(shape) x dtype size,
// no overlaps, no duplicate names, metadata values strings, and the
// ferry.xxh64 checksum when present. Throws CheckpointError.
SafetensorsFile readSafetensors(const std::string &path);

// Writes `tensors` (in the given order) with `metadata` plus
// ferry.format_version and ferry.xxh64, atomically (temp file, flush,
// rename). Throws CheckpointError naming the path when it cannot.
// `written` hears the file's bytes written so far (AtomicFile.h).
void writeSafetensors(const std::string &path,
                      const std::vector<Tensor> &tensors,
                      std::map<std::string, std::string> metadata = {},
                      const std::function<void(size_t)> &written = {});

} // namespace ferry::ckpt
