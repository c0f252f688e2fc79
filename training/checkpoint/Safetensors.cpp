// Reading, validating and writing safetensors checkpoints, and the fp16/bf16
// conversions they need; see Safetensors.h for the format and the contract.
//
// The whole file is held in memory on both paths: a reader reads it whole and
// copies each tensor's bytes out, a writer builds it in a std::string and hands
// it to writeFileAtomically. Tensor bytes are little-endian in the file and
// are used as they are, so this file assumes a little-endian host (x86,
// AArch64); the static_assert below stops a big-endian build.
#include "training/checkpoint/Safetensors.h"

#include "runtime/AtomicFile.h"

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>
#include <utility>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian and is copied as it is; a "
              "big-endian host would need byte swaps");

namespace ferry::ckpt {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr const char *kMetadataKey = "__metadata__";
constexpr const char *kFormatVersionKey = "ferry.format_version";
constexpr const char *kChecksumKey = "ferry.xxh64";
constexpr const char *kFormatVersion = "1";
constexpr const char *kSupportedDTypes = "F32, F16, BF16, I32 or I64";
// No tensor may be larger than this; it keeps every size computation far
// from overflowing uint64_t and int64_t.
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 62;
constexpr size_t kHeaderLengthBytes = 8;
constexpr size_t kDataAlignment = 8;

std::string singleQuoted(const std::string &text) { return "'" + text + "'"; }

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string expectedVsFound(const std::string &expected,
                            const std::string &found) {
  return " (expected " + expected + " vs found " + found + ")";
}

// Appends a short rendering of `value` for a message: two levels deep at
// most and cut off after about kMaxDescriptionLength characters, so that a
// hostile header can make neither the message nor the recursion large.
constexpr size_t kMaxDescriptionLength = 60;

void describeJsonInto(const Json &value, int depth, std::string &out) {
  if (!value.is_array() && !value.is_object()) {
    out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  bool isArray = value.is_array();
  out += isArray ? '[' : '{';
  if (depth >= 2 && !value.empty()) {
    out += "...";
  } else {
    bool first = true;
    for (auto element = value.begin(); element != value.end(); ++element) {
      if (out.size() > kMaxDescriptionLength) {
        out += "...";
        break;
      }
      if (!first)
        out += ',';
      first = false;
      if (!isArray)
        out += Json(element.key())
                   .dump(-1, ' ', false, Json::error_handler_t::replace) +
               ':';
      describeJsonInto(*element, depth + 1, out);
    }
  }
  out += isArray ? ']' : '}';
}

std::string describeJson(const Json &value) {
  std::string text;
  describeJsonInto(value, 0, text);
  if (text.size() > kMaxDescriptionLength)
    text = text.substr(0, kMaxDescriptionLength) + "...";
  return text;
}

bool parseDType(const std::string &name, DType &dtype) {
  for (DType candidate :
       {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64}) {
    if (name == dtypeName(candidate)) {
      dtype = candidate;
      return true;
    }
  }
  return false;
}

// The element count and byte size of a tensor, or a message saying why the
// shape is unusable (a negative dimension, or more than kMaxTensorBytes).
struct TensorSize {
  int64_t elements = 0;
  uint64_t bytes = 0;
  std::optional<std::string> error;
};

TensorSize computeTensorSize(const std::vector<int64_t> &shape, DType dtype) {
  TensorSize size;
  bool anyZero = false;
  for (int64_t dim : shape) {
    if (dim < 0) {
      size.error = "shape " + shapeText(shape) + " has a negative dimension" +
                   expectedVsFound("dimensions >= 0", std::to_string(dim));
      return size;
    }
    anyZero |= dim == 0;
  }
  if (anyZero)
    return size; // zero elements, whatever the other dimensions are
  uint64_t elements = 1;
  uint64_t elementBytes = dtypeSize(dtype);
  for (int64_t dim : shape) {
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dim),
                               &elements) ||
        __builtin_mul_overflow(elements, elementBytes, &bytes) ||
        bytes > kMaxTensorBytes) {
      size.error = "shape " + shapeText(shape) + " of " + dtypeName(dtype) +
                   " is too large" +
                   expectedVsFound("at most 2^62 bytes", "more");
      return size;
    }
  }
  size.elements = static_cast<int64_t>(elements);
  size.bytes = elements * elementBytes;
  return size;
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// IEEE binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
float halfBitsToFloat(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) // infinity, or NaN with its payload kept
    return floatFromBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0)
      return floatFromBits(sign);
    // Subnormal: mantissa x 2^-24. Shift until the leading 1 reaches the
    // implicit-bit position, which makes it a normal fp32 number.
    int shift = 0;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      ++shift;
    }
    uint32_t floatExponent = static_cast<uint32_t>(127 - 14 - shift);
    return floatFromBits(sign | (floatExponent << 23) |
                         ((mantissa & 0x3ffu) << 13));
  }
  return floatFromBits(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

// Rounds to nearest, ties to even. Values at or above 65520 (halfway between
// the largest half, 65504, and 2^16) become infinity; NaN stays a (quiet) NaN.
uint16_t floatToHalfBits(float value) {
  uint32_t bits = floatBits(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN: quiet bit set, top payload bits kept
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) // 65520 or more, infinity included
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) { // 2^-14 or more: a normal half
    // Drop 13 mantissa bits and rebias the exponent from 127 to 15; a carry
    // out of the mantissa correctly bumps the exponent.
    uint32_t half = (magnitude >> 13) - ((127u - 15u) << 10);
    uint32_t dropped = magnitude & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  if (magnitude <= 0x33000000u) // 2^-25 or less rounds to zero (a tie at
    return static_cast<uint16_t>(sign); // 2^-25 goes to the even 0)
  // A subnormal half: the value in units of 2^-24, rounded. A result of 0x400
  // is the smallest normal half, which is the right encoding.
  uint32_t exponent = magnitude >> 23; // 102..112
  uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - exponent; // 14..24
  uint32_t half = significand >> shift;
  uint32_t dropped = significand & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1u);
  if (dropped > halfway || (dropped == halfway && (half & 1u)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}

// bfloat16 is the top half of an fp32.
float bfloat16BitsToFloat(uint16_t bfloat) {
  return floatFromBits(static_cast<uint32_t>(bfloat) << 16);
}

// Rounds to nearest, ties to even; values past the largest bfloat16 become
// infinity through the carry. NaN stays a (quiet) NaN.
uint16_t floatToBfloat16Bits(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

template <typename Integer>
Integer truncateToInteger(const std::string &tensorName, float value,
                          int64_t index, DType dtype) {
  // The limits are -2^(n-1) and 2^(n-1), exact as doubles; the value is
  // truncated first, and the comparisons are written so that NaN fails them.
  double lowest = static_cast<double>(std::numeric_limits<Integer>::min());
  double pastHighest = -lowest;
  double truncated = std::trunc(static_cast<double>(value));
  if (!(truncated >= lowest && truncated < pastHighest))
    throw CheckpointError("tensor " + singleQuoted(tensorName) + ": value " +
                          std::to_string(value) + " at index " +
                          std::to_string(index) + " does not fit in " +
                          dtypeName(dtype));
  return static_cast<Integer>(value);
}

template <typename Element> Element loadElement(const char *bytes) {
  Element element;
  std::memcpy(&element, bytes, sizeof element);
  return element;
}

template <typename Element>
void appendElement(std::vector<char> &out, Element element) {
  const char *bytes = reinterpret_cast<const char *>(&element);
  out.insert(out.end(), bytes, bytes + sizeof element);
}

std::string readWholeFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw CheckpointError(path + ": cannot open (" + std::strerror(errno) +
                          ")");
  std::string contents;
  struct stat info;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode))
    contents.reserve(static_cast<size_t>(info.st_size));
  std::vector<char> buffer(1 << 20);
  while (true) {
    ssize_t count = ::read(fd, buffer.data(), buffer.size());
    if (count < 0 && errno == EINTR)
      continue;
    if (count < 0) {
      std::string message =
          path + ": cannot read (" + std::strerror(errno) + ")";
      ::close(fd);
      throw CheckpointError(message);
    }
    if (count == 0)
      break;
    contents.append(buffer.data(), static_cast<size_t>(count));
  }
  ::close(fd);
  return contents;
}

std::string checksumText(const char *data, size_t size) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(XXH64(data, size, 0)));
  return text;
}

// A tensor found in the header, before its bytes are copied out.
struct HeaderEntry {
  Tensor tensor; // without data
  uint64_t begin = 0;
  uint64_t end = 0;
  size_t headerIndex = 0; // position in the header, to order empty tensors
};

// Reads one file; every failure throws a CheckpointError naming the path.
class SafetensorsReader {
public:
  SafetensorsReader(std::string path, std::string contents)
      : path_(std::move(path)), contents_(std::move(contents)) {}

  SafetensorsFile read() {
    Json header = parseHeader();
    SafetensorsFile file;
    file.path = path_;
    if (header.contains(kMetadataKey))
      file.metadata = readMetadata(header.at(kMetadataKey));
    checkFormatVersion(file.metadata);

    std::vector<HeaderEntry> entries;
    for (size_t i = 0; i < headerKeys_.size(); ++i) {
      const std::string &name = headerKeys_[i];
      if (name != kMetadataKey)
        entries.push_back(readEntry(name, header.at(name), i));
    }
    std::sort(entries.begin(), entries.end(),
              [](const HeaderEntry &a, const HeaderEntry &b) {
                return std::tie(a.begin, a.end, a.headerIndex) <
                       std::tie(b.begin, b.end, b.headerIndex);
              });
    checkNoOverlaps(entries);
    checkChecksum(file.metadata);

    const char *data = contents_.data() + dataStart_;
    for (HeaderEntry &entry : entries) {
      entry.tensor.data.assign(data + entry.begin, data + entry.end);
      file.tensors.push_back(std::move(entry.tensor));
    }
    return file;
  }

private:
  // Every fault of the file's structure names the way out: the file is
  // damaged (or another format), so it must be copied or written again.
  [[noreturn]] void fail(const std::string &what) const {
    throw CheckpointError(
        path_ + ": " + what +
        "; the file is damaged or not safetensors: copy it again or write it "
        "again (a checkpoint step: resume from another step directory)");
  }
  [[noreturn]] void failTensor(const std::string &name,
                               const std::string &what) const {
    fail("tensor " + singleQuoted(name) + ": " + what);
  }

  Json parseHeader() {
    size_t fileSize = contents_.size();
    if (fileSize < kHeaderLengthBytes)
      fail("too short for a safetensors file, which starts with an 8-byte "
           "header length" +
           expectedVsFound("at least 8 bytes", std::to_string(fileSize)));
    uint64_t headerLength = 0;
    for (size_t i = 0; i < kHeaderLengthBytes; ++i)
      headerLength |=
          static_cast<uint64_t>(static_cast<unsigned char>(contents_[i]))
          << (8 * i);
    uint64_t available = fileSize - kHeaderLengthBytes;
    if (headerLength > available)
      fail("truncated: the header length runs past the end of the file" +
           expectedVsFound("at most " + std::to_string(available) +
                               " header bytes",
                           std::to_string(headerLength)));
    dataStart_ = kHeaderLengthBytes + headerLength;

    // The callback sees every key as it is parsed: it records the top-level
    // keys in file order and catches a key given twice in one object, which
    // the parser itself would silently resolve to the last value.
    std::vector<std::set<std::string>> openObjects;
    std::optional<std::string> duplicateKey;
    auto watchKeys = [&](int, Json::parse_event_t event, Json &parsed) {
      if (event == Json::parse_event_t::object_start) {
        openObjects.emplace_back();
      } else if (event == Json::parse_event_t::object_end) {
        openObjects.pop_back();
      } else if (event == Json::parse_event_t::key && !openObjects.empty()) {
        const std::string &key = parsed.get_ref<const std::string &>();
        if (!openObjects.back().insert(key).second && !duplicateKey)
          duplicateKey = key;
        if (openObjects.size() == 1)
          headerKeys_.push_back(key);
      }
      return true;
    };
    Json header;
    const char *text = contents_.data() + kHeaderLengthBytes;
    try {
      header = Json::parse(text, text + headerLength, watchKeys);
    } catch (const Json::exception &error) {
      // Drop the "[json.exception.parse_error.101] " prefix.
      std::string reason = error.what();
      size_t prefixEnd = reason.find("] ");
      if (reason.rfind("[json.exception.", 0) == 0 &&
          prefixEnd != std::string::npos)
        reason = reason.substr(prefixEnd + 2);
      fail("header is not valid JSON" +
           expectedVsFound("a JSON object", reason));
    }
    if (!header.is_object())
      fail("header is not a JSON object" +
           expectedVsFound("an object", std::string(header.type_name())));
    if (duplicateKey)
      fail("header has the key " + singleQuoted(*duplicateKey) +
           " twice in one object" +
           expectedVsFound("unique keys", "a duplicate"));
    return header;
  }

  std::map<std::string, std::string> readMetadata(const Json &metadata) {
    if (!metadata.is_object())
      fail(std::string(kMetadataKey) + " is not an object" +
           expectedVsFound("an object of strings",
                           std::string(metadata.type_name())));
    std::map<std::string, std::string> result;
    for (const auto &[key, value] : metadata.items()) {
      if (!value.is_string())
        fail(std::string(kMetadataKey) + " value of " + singleQuoted(key) +
             " is not a string" +
             expectedVsFound("a string", value.type_name() + std::string(" ") +
                                             describeJson(value)));
      result[key] = value.get<std::string>();
    }
    return result;
  }

  void checkFormatVersion(const std::map<std::string, std::string> &metadata) {
    auto version = metadata.find(kFormatVersionKey);
    if (version != metadata.end() && version->second != kFormatVersion)
      fail(
          std::string("written in ferry checkpoint format version ") +
          singleQuoted(version->second) +
          ", and this build reads only version " + kFormatVersion +
          expectedVsFound(std::string(kFormatVersionKey) + " " + kFormatVersion,
                          version->second));
  }

  // A non-negative integer that fits in int64_t, or a failure naming `what`.
  int64_t readCount(const std::string &name, const char *what,
                    const Json &value) const {
    if (value.is_number_unsigned()) {
      uint64_t count = value.get<uint64_t>();
      if (count > static_cast<uint64_t>(INT64_MAX))
        failTensor(name, std::string(what) + " is too large" +
                             expectedVsFound("at most 2^63 - 1",
                                             std::to_string(count)));
      return static_cast<int64_t>(count);
    }
    if (value.is_number_integer()) {
      int64_t count = value.get<int64_t>();
      if (count < 0)
        failTensor(name,
                   std::string(what) + " is negative" +
                       expectedVsFound("a value >= 0", std::to_string(count)));
      return count;
    }
    failTensor(name, std::string(what) + " is not an integer" +
                         expectedVsFound("a non-negative integer",
                                         value.type_name() + std::string(" ") +
                                             describeJson(value)));
  }

  const Json &requireField(const std::string &name, const Json &entry,
                           const char *field, const char *expected) const {
    if (!entry.contains(field))
      failTensor(name, std::string("the entry has no \"") + field + "\"" +
                           expectedVsFound(expected, "nothing"));
    return entry[field];
  }

  HeaderEntry readEntry(const std::string &name, const Json &entry,
                        size_t headerIndex) {
    if (!entry.is_object())
      failTensor(name,
                 "the header entry is not an object" +
                     expectedVsFound("an object with dtype, shape and "
                                     "data_offsets",
                                     entry.type_name() + std::string(" ") +
                                         describeJson(entry)));
    HeaderEntry result;
    result.headerIndex = headerIndex;
    result.tensor.name = name;

    const Json &dtype = requireField(name, entry, "dtype", "a dtype string");
    if (!dtype.is_string())
      failTensor(name,
                 "dtype is not a string" +
                     expectedVsFound("a dtype string",
                                     dtype.type_name() + std::string(" ") +
                                         describeJson(dtype)));
    const std::string &dtypeText = dtype.get_ref<const std::string &>();
    if (!parseDType(dtypeText, result.tensor.dtype))
      failTensor(name, "dtype " + singleQuoted(dtypeText) +
                           " is not supported; ferry reads " +
                           kSupportedDTypes +
                           expectedVsFound(kSupportedDTypes, dtypeText));

    const Json &shape =
        requireField(name, entry, "shape", "an array of dimensions");
    if (!shape.is_array())
      failTensor(name,
                 "shape is not an array" +
                     expectedVsFound("an array of dimensions",
                                     shape.type_name() + std::string(" ") +
                                         describeJson(shape)));
    for (const Json &dim : shape) {
      if (dim.is_number_integer() && !dim.is_number_unsigned() &&
          dim.get<int64_t>() < 0)
        failTensor(
            name, "shape " + describeJson(shape) + " has a negative dimension" +
                      expectedVsFound("dimensions >= 0", describeJson(dim)));
      result.tensor.shape.push_back(readCount(name, "a shape dimension", dim));
    }

    const Json &offsets =
        requireField(name, entry, "data_offsets", "an array [begin, end]");
    if (!offsets.is_array() || offsets.size() != 2)
      failTensor(name,
                 "data_offsets is not a pair [begin, end]" +
                     expectedVsFound("an array of 2 integers",
                                     offsets.type_name() + std::string(" ") +
                                         describeJson(offsets)));
    result.begin = static_cast<uint64_t>(
        readCount(name, "data_offsets begin", offsets[0]));
    result.end =
        static_cast<uint64_t>(readCount(name, "data_offsets end", offsets[1]));
    std::string offsetsText = "[" + std::to_string(result.begin) + ", " +
                              std::to_string(result.end) + "]";
    if (result.begin > result.end)
      failTensor(name, "data_offsets begin after they end" +
                           expectedVsFound("begin <= end", offsetsText));

    TensorSize size =
        computeTensorSize(result.tensor.shape, result.tensor.dtype);
    if (size.error)
      failTensor(name, *size.error);
    uint64_t span = result.end - result.begin;
    if (span != size.bytes)
      failTensor(name,
                 "data_offsets " + offsetsText + " span " +
                     std::to_string(span) + " bytes, but shape " +
                     shapeText(result.tensor.shape) + " of " +
                     dtypeName(result.tensor.dtype) + " needs " +
                     std::to_string(size.bytes) +
                     expectedVsFound(std::to_string(size.bytes) + " bytes",
                                     std::to_string(span) + " bytes"));
    uint64_t dataSize = contents_.size() - dataStart_;
    if (result.end > dataSize)
      fail("truncated: tensor " + singleQuoted(name) +
           " ends past the end of the data section (the file has " +
           std::to_string(contents_.size()) + " bytes, " +
           std::to_string(dataSize) + " of them data)" +
           expectedVsFound("data_offsets end <= " + std::to_string(dataSize),
                           std::to_string(result.end)));
    return result;
  }

  // `entries` are sorted by begin. Empty tensors occupy no bytes and cannot
  // overlap anything.
  void checkNoOverlaps(const std::vector<HeaderEntry> &entries) const {
    const HeaderEntry *previous = nullptr;
    for (const HeaderEntry &entry : entries) {
      if (entry.begin == entry.end)
        continue;
      if (previous && entry.begin < previous->end)
        fail("tensors " + singleQuoted(previous->tensor.name) + " and " +
             singleQuoted(entry.tensor.name) + " overlap in the data section" +
             expectedVsFound(singleQuoted(entry.tensor.name) + " to begin at " +
                                 std::to_string(previous->end) + " or later",
                             std::to_string(entry.begin)));
      previous = &entry;
    }
  }

  void checkChecksum(const std::map<std::string, std::string> &metadata) const {
    auto stored = metadata.find(kChecksumKey);
    if (stored == metadata.end())
      return;
    std::string computed = checksumText(contents_.data() + dataStart_,
                                        contents_.size() - dataStart_);
    if (stored->second != computed)
      fail("the file is corrupted: the xxHash64 of its data section does "
           "not match the checksum in its header" +
           expectedVsFound(stored->second, computed));
  }

  std::string path_;
  std::string contents_;
  uint64_t dataStart_ = 0;
  std::vector<std::string> headerKeys_; // top-level keys in file order
};

} // namespace

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  }
  return "invalid DType";
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  }
  throw CheckpointError("invalid DType value " +
                        std::to_string(static_cast<int>(dtype)));
}

int64_t Tensor::elements() const {
  TensorSize size = computeTensorSize(shape, dtype);
  if (size.error)
    throw CheckpointError("tensor " + singleQuoted(name) + ": " + *size.error);
  return size.elements;
}

std::vector<float> Tensor::toFloat32() const {
  int64_t count = elements();
  uint64_t bytes = static_cast<uint64_t>(count) * dtypeSize(dtype);
  if (data.size() != bytes)
    throw CheckpointError(
        "tensor " + singleQuoted(name) + ": its data has " +
        std::to_string(data.size()) + " bytes, but shape " + shapeText(shape) +
        " of " + dtypeName(dtype) + " needs " + std::to_string(bytes) +
        expectedVsFound(std::to_string(bytes) + " bytes",
                        std::to_string(data.size()) + " bytes"));
  std::vector<float> values(static_cast<size_t>(count));
  const char *bytesIn = data.data();
  size_t step = dtypeSize(dtype);
  for (size_t i = 0; i < values.size(); ++i, bytesIn += step) {
    switch (dtype) {
    case DType::F32:
      values[i] = loadElement<float>(bytesIn);
      break;
    case DType::F16:
      values[i] = halfBitsToFloat(loadElement<uint16_t>(bytesIn));
      break;
    case DType::BF16:
      values[i] = bfloat16BitsToFloat(loadElement<uint16_t>(bytesIn));
      break;
    case DType::I32:
      values[i] = static_cast<float>(loadElement<int32_t>(bytesIn));
      break;
    case DType::I64:
      values[i] = static_cast<float>(loadElement<int64_t>(bytesIn));
      break;
    }
  }
  return values;
}

Tensor makeTensor(std::string name, std::vector<int64_t> shape,
                  const float *values, DType dtype) {
  Tensor tensor;
  tensor.name = std::move(name);
  tensor.dtype = dtype;
  tensor.shape = std::move(shape);
  int64_t count = tensor.elements();
  tensor.data.reserve(static_cast<size_t>(count) * dtypeSize(dtype));
  for (int64_t i = 0; i < count; ++i) {
    float value = values[i];
    switch (dtype) {
    case DType::F32:
      appendElement(tensor.data, value);
      break;
    case DType::F16:
      appendElement(tensor.data, floatToHalfBits(value));
      break;
    case DType::BF16:
      appendElement(tensor.data, floatToBfloat16Bits(value));
      break;
    case DType::I32:
      appendElement(tensor.data,
                    truncateToInteger<int32_t>(tensor.name, value, i, dtype));
      break;
    case DType::I64:
      appendElement(tensor.data,
                    truncateToInteger<int64_t>(tensor.name, value, i, dtype));
      break;
    }
  }
  return tensor;
}

const Tensor *SafetensorsFile::find(const std::string &name) const {
  for (const Tensor &tensor : tensors)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

SafetensorsFile readSafetensors(const std::string &path) {
  return SafetensorsReader(path, readWholeFile(path)).read();
}

void writeSafetensors(const std::string &path,
                      const std::vector<Tensor> &tensors,
                      std::map<std::string, std::string> metadata,
                      const std::function<void(size_t)> &written) {
  auto fail = [&](const std::string &what) {
    throw CheckpointError(path + ": cannot write the checkpoint: " + what);
  };

  std::set<std::string> names;
  uint64_t dataSize = 0;
  for (const Tensor &tensor : tensors) {
    if (tensor.name == kMetadataKey)
      fail("a tensor is named " + singleQuoted(kMetadataKey) +
           ", the key safetensors reserves for metadata");
    if (!names.insert(tensor.name).second)
      fail("two tensors are named " + singleQuoted(tensor.name));
    TensorSize size = computeTensorSize(tensor.shape, tensor.dtype);
    if (size.error)
      fail("tensor " + singleQuoted(tensor.name) + ": " + *size.error);
    if (tensor.data.size() != size.bytes)
      fail("tensor " + singleQuoted(tensor.name) + " has " +
           std::to_string(tensor.data.size()) + " bytes of data, but shape " +
           shapeText(tensor.shape) + " of " + dtypeName(tensor.dtype) +
           " needs " + std::to_string(size.bytes) +
           expectedVsFound(std::to_string(size.bytes) + " bytes",
                           std::to_string(tensor.data.size()) + " bytes"));
    dataSize += size.bytes; // each at most 2^62, so no overflow in practice
  }

  std::string data;
  data.reserve(dataSize);
  std::vector<std::pair<uint64_t, uint64_t>> offsets;
  for (const Tensor &tensor : tensors) {
    uint64_t begin = data.size();
    data.append(tensor.data.data(), tensor.data.size());
    offsets.emplace_back(begin, data.size());
  }
  metadata[kFormatVersionKey] = kFormatVersion;
  metadata[kChecksumKey] = checksumText(data.data(), data.size());

  // Metadata first, as Hugging Face writes it, then the tensors in order.
  OrderedJson metadataJson = OrderedJson::object();
  for (const auto &[key, value] : metadata)
    metadataJson[key] = value;
  OrderedJson header = OrderedJson::object();
  header[kMetadataKey] = std::move(metadataJson);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor &tensor = tensors[i];
    header[tensor.name] = {
        {"dtype", dtypeName(tensor.dtype)},
        {"shape", tensor.shape},
        {"data_offsets", {offsets[i].first, offsets[i].second}}};
  }

  std::string headerText;
  try {
    headerText = header.dump();
  } catch (const OrderedJson::exception &error) {
    fail(std::string("a tensor name or metadata string is not valid UTF-8 (") +
         error.what() + ")");
  }
  // Pad with spaces so the data section starts 8-byte aligned.
  size_t paddedEnd = kHeaderLengthBytes + headerText.size();
  paddedEnd =
      (paddedEnd + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  headerText.append(paddedEnd - kHeaderLengthBytes - headerText.size(), ' ');

  std::string file;
  file.reserve(kHeaderLengthBytes + headerText.size() + data.size());
  uint64_t headerLength = headerText.size();
  for (size_t i = 0; i < kHeaderLengthBytes; ++i)
    file.push_back(static_cast<char>((headerLength >> (8 * i)) & 0xffu));
  file += headerText;
  file += data;
  if (std::optional<std::string> error =
          writeFileAtomically(path, file, written))
    throw CheckpointError(*error);
}

} // namespace ferry::ckpt
