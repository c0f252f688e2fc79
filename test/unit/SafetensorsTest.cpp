// Safetensors checkpoints: every dtype survives a write and a read with exact
// values, fp16/bf16 rounding is to nearest even, a file as Hugging Face writes
// it reads, and every malformed, truncated or corrupted file is refused with a
// CheckpointError naming the file and the problem (and nothing worse).
#include "training/checkpoint/Safetensors.h"
#include "test/unit/TestFiles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace ferry::ckpt;
using ::testing::HasSubstr;

namespace {

using ferry::test::readFile;
using ferry::test::writeFile;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A safetensors file: the little-endian header length, `header`, `data`.
std::string fileBytes(const std::string &header, const std::string &data) {
  std::string bytes;
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  return bytes + header + data;
}

uint64_t headerLengthOf(const std::string &bytes) {
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  return length;
}

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// The 16-bit elements of an F16 or BF16 tensor.
std::vector<uint16_t> halfWords(const Tensor &tensor) {
  std::vector<uint16_t> words(tensor.data.size() / 2);
  std::memcpy(words.data(), tensor.data.data(), words.size() * 2);
  return words;
}

std::vector<uint16_t> convertToHalfWords(const std::vector<float> &values,
                                         DType dtype) {
  return halfWords(makeTensor("t", {static_cast<int64_t>(values.size())},
                              values.data(), dtype));
}

Tensor tensorFromHalfWords(const std::vector<uint16_t> &words, DType dtype) {
  Tensor tensor;
  tensor.name = "words";
  tensor.dtype = dtype;
  tensor.shape = {static_cast<int64_t>(words.size())};
  tensor.data.resize(words.size() * 2);
  std::memcpy(tensor.data.data(), words.data(), tensor.data.size());
  return tensor;
}

// Exact equality that treats NaN as equal to NaN and tells -0 from +0.
void expectSameFloats(const std::vector<float> &actual,
                      const std::vector<float> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(actual[i])) << "element " << i;
    else
      EXPECT_EQ(bitsOf(actual[i]), bitsOf(expected[i]))
          << "element " << i << ": " << actual[i] << " vs " << expected[i];
  }
}

class Safetensors : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/ferry-safetensors-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override {
    std::string command = "rm -rf '" + dir + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }

  // The CheckpointError message reading `bytes` gives; a failure when it
  // reads or throws something else.
  std::string readError(const std::string &bytes) {
    std::string path = dir + "/bad.safetensors";
    writeFile(path, bytes);
    try {
      readSafetensors(path);
    } catch (const CheckpointError &error) {
      std::string message = error.what();
      EXPECT_THAT(message, HasSubstr(path));
      return message;
    } catch (const std::exception &error) {
      ADD_FAILURE() << "not a CheckpointError: " << error.what();
      return "";
    }
    ADD_FAILURE() << "read without an error";
    return "";
  }

  // Reading `bytes` either succeeds or throws a CheckpointError; counts the
  // errors.
  void readExpectingNoCrash(const std::string &bytes, const std::string &what,
                            int &errors) {
    std::string path = dir + "/fuzz.safetensors";
    writeFile(path, bytes);
    try {
      readSafetensors(path);
    } catch (const CheckpointError &) {
      ++errors;
    } catch (const std::exception &error) {
      ADD_FAILURE() << what << ": not a CheckpointError: " << error.what();
    } catch (...) {
      ADD_FAILURE() << what << ": threw something that is not an exception";
    }
  }

  // A small valid file as ferry writes it, with a checksum.
  std::string smallValidFile() {
    std::string path = dir + "/small.safetensors";
    std::vector<float> weights = {1.5f, -2.0f, 0.25f, 8.0f, -0.5f, 3.0f};
    std::vector<float> bias = {0.5f, -1.0f};
    float step = 17.0f;
    writeSafetensors(path,
                     {makeTensor("encoder.weight", {2, 3}, weights.data()),
                      makeTensor("encoder.bias", {2}, bias.data(), DType::BF16),
                      makeTensor("step", {}, &step, DType::I64)},
                     {{"run", "smoke"}});
    return readFile(path);
  }

  std::string dir;
};

const char *kValidEntry =
    R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
const std::string kEightBytes(8, '\0');

} // namespace

TEST_F(Safetensors, RoundTripsEveryDTypeWithMetadata) {
  float smallestNormalHalf = std::ldexp(1.0f, -14);
  float smallestSubnormalHalf = std::ldexp(1.0f, -24);
  std::vector<float> f32 = {1.0f, -0.0f,         kInf,   -kInf,
                            kNaN, 3.4028235e38f, 1e-45f, 0.1f};
  std::vector<float> f16 = {1.0f,
                            -2.5f,
                            65504.0f,
                            smallestNormalHalf,
                            smallestSubnormalHalf,
                            1023 * smallestSubnormalHalf,
                            kInf,
                            -kInf,
                            kNaN};
  // 1 + 2^-8 lies halfway between the bfloat16 values 1 and 1 + 2^-7 and
  // rounds to the even one, 1; 1 + 3 x 2^-8 lies halfway between 1 + 2^-7
  // and 1 + 2^-6 and rounds to 1 + 2^-6.
  std::vector<float> bf16 = {1.0f + std::ldexp(1.0f, -8),
                             1.0f + 3 * std::ldexp(1.0f, -8),
                             -3.0f,
                             kInf,
                             -kInf,
                             kNaN};
  std::vector<float> bf16Expected = {
      1.0f, 1.0f + std::ldexp(1.0f, -6), -3.0f, kInf, -kInf, kNaN};
  std::vector<float> i32 = {7.9f, -7.9f, 2147483520.0f, -2147483648.0f};
  std::vector<float> i32Expected = {7.0f, -7.0f, 2147483520.0f, -2147483648.0f};
  std::vector<float> i64 = {std::ldexp(1.0f, 40), -3.5f, 0.0f};
  std::vector<float> i64Expected = {std::ldexp(1.0f, 40), -3.0f, 0.0f};
  float scalar = 42.0f;

  std::vector<Tensor> tensors = {
      makeTensor("f32", {2, 4}, f32.data()),
      makeTensor("f16", {3, 3}, f16.data(), DType::F16),
      makeTensor("bf16", {6}, bf16.data(), DType::BF16),
      makeTensor("i32", {2, 2}, i32.data(), DType::I32),
      makeTensor("i64", {3, 1}, i64.data(), DType::I64),
      makeTensor("scalar", {}, &scalar),
      makeTensor("empty", {0, 3}, nullptr, DType::F16),
  };
  std::string path = dir + "/model.safetensors";
  writeSafetensors(path, tensors, {{"step", "100"}, {"format", "pt"}});
  SafetensorsFile file = readSafetensors(path);

  EXPECT_EQ(file.path, path);
  ASSERT_EQ(file.metadata.size(), 4u);
  EXPECT_EQ(file.metadata["step"], "100");
  EXPECT_EQ(file.metadata["format"], "pt");
  EXPECT_EQ(file.metadata["ferry.format_version"], "1");
  EXPECT_THAT(file.metadata["ferry.xxh64"],
              ::testing::MatchesRegex("[0-9a-f]{16}"));

  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE(tensors[i].name);
    EXPECT_EQ(file.tensors[i].name, tensors[i].name);
    EXPECT_EQ(file.tensors[i].dtype, tensors[i].dtype);
    EXPECT_EQ(file.tensors[i].shape, tensors[i].shape);
    EXPECT_EQ(file.tensors[i].data, tensors[i].data);
  }
  expectSameFloats(file.find("f32")->toFloat32(), f32);
  expectSameFloats(file.find("f16")->toFloat32(), f16);
  expectSameFloats(file.find("bf16")->toFloat32(), bf16Expected);
  expectSameFloats(file.find("i32")->toFloat32(), i32Expected);
  expectSameFloats(file.find("i64")->toFloat32(), i64Expected);
  expectSameFloats(file.find("scalar")->toFloat32(), {42.0f});
  EXPECT_EQ(file.find("scalar")->elements(), 1);
  EXPECT_EQ(file.find("empty")->elements(), 0);
  EXPECT_TRUE(file.find("empty")->toFloat32().empty());
  EXPECT_EQ(file.find("missing"), nullptr);

  // The integers are stored as integers, truncated toward zero.
  const Tensor &i32Tensor = *file.find("i32");
  ASSERT_EQ(i32Tensor.data.size(), 16u);
  int32_t storedI32[4];
  std::memcpy(storedI32, i32Tensor.data.data(), sizeof storedI32);
  EXPECT_EQ(storedI32[0], 7);
  EXPECT_EQ(storedI32[1], -7);
  EXPECT_EQ(storedI32[2], 2147483520);
  EXPECT_EQ(storedI32[3], INT32_MIN);
  const Tensor &i64Tensor = *file.find("i64");
  ASSERT_EQ(i64Tensor.data.size(), 24u);
  int64_t storedI64[3];
  std::memcpy(storedI64, i64Tensor.data.data(), sizeof storedI64);
  EXPECT_EQ(storedI64[0], int64_t{1} << 40);
  EXPECT_EQ(storedI64[1], -3);
  EXPECT_EQ(storedI64[2], 0);
}

TEST_F(Safetensors, WritesPackedOffsetsInOrderAndAnAlignedDataSection) {
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  std::string path = dir + "/packed.safetensors";
  writeSafetensors(path, {makeTensor("z", {3}, values.data(), DType::F16),
                          makeTensor("a", {2, 3}, values.data()),
                          makeTensor("none", {0}, nullptr, DType::I64),
                          makeTensor("m", {1}, values.data(), DType::I64)});
  std::string bytes = readFile(path);
  uint64_t headerLength = headerLengthOf(bytes);
  ASSERT_LE(8 + headerLength, bytes.size());
  EXPECT_EQ((8 + headerLength) % 8, 0u) << "data section not 8-byte aligned";
  EXPECT_EQ(bytes.size() - 8 - headerLength, 6u + 24u + 0u + 8u);
  std::string headerText = bytes.substr(8, headerLength);
  EXPECT_NE(headerText.find('{'), std::string::npos);
  EXPECT_EQ(headerText.find_first_not_of(' ', headerText.rfind('}') + 1),
            std::string::npos)
      << "the header may be padded with spaces only";

  nlohmann::json header = nlohmann::json::parse(headerText);
  using Offsets = std::vector<uint64_t>;
  EXPECT_EQ(header["z"]["data_offsets"].get<Offsets>(), Offsets({0, 6}));
  EXPECT_EQ(header["a"]["data_offsets"].get<Offsets>(), Offsets({6, 30}));
  EXPECT_EQ(header["none"]["data_offsets"].get<Offsets>(), Offsets({30, 30}));
  EXPECT_EQ(header["m"]["data_offsets"].get<Offsets>(), Offsets({30, 38}));
  EXPECT_EQ(header["a"]["dtype"], "F32");
  EXPECT_EQ(header["a"]["shape"].get<std::vector<int64_t>>(),
            std::vector<int64_t>({2, 3}));
  EXPECT_EQ(header["__metadata__"]["ferry.format_version"], "1");

  SafetensorsFile file = readSafetensors(path);
  ASSERT_EQ(file.tensors.size(), 4u);
  EXPECT_EQ(file.tensors[0].name, "z");
  EXPECT_EQ(file.tensors[1].name, "a");
  EXPECT_EQ(file.tensors[2].name, "none");
  EXPECT_EQ(file.tensors[3].name, "m");
}

TEST_F(Safetensors, ReadsAFileAsHuggingFaceWritesIt) {
  // No ferry checksum; tensors listed out of data order; the header padded
  // with two spaces to 144 bytes.
  const char header[] =
      R"({"__metadata__":{"format":"pt"},)"
      R"("b":{"dtype":"BF16","shape":[1,2],"data_offsets":[8,12]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  )";
  ASSERT_EQ(sizeof header - 1, 144u);
  const unsigned char prefix[] = {0x90, 0, 0, 0, 0, 0, 0, 0};
  const unsigned char data[] = {0x00, 0x00, 0x80, 0x3f, // a[0] = 1.0f
                                0x00, 0x00, 0x20, 0xc0, // a[1] = -2.5f
                                0xc0, 0x3f,             // b[0] = 1.5
                                0x00, 0xc1};            // b[1] = -8
  std::string bytes(reinterpret_cast<const char *>(prefix), sizeof prefix);
  bytes += header;
  bytes.append(reinterpret_cast<const char *>(data), sizeof data);
  std::string path = dir + "/hf.safetensors";
  writeFile(path, bytes);

  SafetensorsFile file = readSafetensors(path);
  EXPECT_EQ(file.metadata,
            (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(file.tensors.size(), 2u);
  EXPECT_EQ(file.tensors[0].name, "a");
  EXPECT_EQ(file.tensors[0].dtype, DType::F32);
  EXPECT_EQ(file.tensors[0].shape, std::vector<int64_t>({2}));
  expectSameFloats(file.tensors[0].toFloat32(), {1.0f, -2.5f});
  EXPECT_EQ(file.tensors[1].name, "b");
  EXPECT_EQ(file.tensors[1].dtype, DType::BF16);
  EXPECT_EQ(file.tensors[1].shape, std::vector<int64_t>({1, 2}));
  expectSameFloats(file.tensors[1].toFloat32(), {1.5f, -8.0f});
}

TEST(SafetensorsConversion, HalfRoundsToNearestEven) {
  float unit = std::ldexp(1.0f, -24); // the smallest subnormal half
  std::vector<float> values = {
      1.0f,
      -2.0f,
      0.0f,
      -0.0f,
      65504.0f,                         // the largest half
      65519.996f,                       // just below the tie: 65504
      65520.0f,                         // the tie with 2^16: infinity
      1e30f,                            // far out of range: infinity
      -1e30f,                           // -infinity
      unit,                             // the smallest subnormal
      unit / 2,                         // a tie with 0: the even 0
      unit / 2 * 1.0001f,               // just above the tie: the smallest
      3 * unit / 2,                     // a tie between 1 and 2: 2
      5 * unit / 2,                     // a tie between 2 and 3: 2
      1023 * unit,                      // the largest subnormal
      1023.5f * unit,                   // a tie: the smallest normal
      std::ldexp(1.0f, -14),            // the smallest normal
      1.0f + std::ldexp(1.0f, -11),     // a tie between 1 and 1 + 2^-10: 1
      1.0f + 3 * std::ldexp(1.0f, -11), // a tie: 1 + 2^-9
      1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20), // above: 1 + 2^-10
      kInf,
      -kInf,
  };
  std::vector<uint16_t> expected = {
      0x3c00, 0xc000, 0x0000, 0x8000, 0x7bff, 0x7bff, 0x7c00, 0x7c00,
      0xfc00, 0x0001, 0x0000, 0x0001, 0x0002, 0x0002, 0x03ff, 0x0400,
      0x0400, 0x3c00, 0x3c02, 0x3c01, 0x7c00, 0xfc00,
  };
  EXPECT_EQ(convertToHalfWords(values, DType::F16), expected);

  std::vector<uint16_t> nan =
      convertToHalfWords({kNaN, -kNaN, floatFromBits(0x7f800001)}, DType::F16);
  for (uint16_t word : nan)
    EXPECT_TRUE((word & 0x7c00) == 0x7c00 && (word & 0x03ff) != 0)
        << std::hex << word << " is not a NaN";
}

TEST(SafetensorsConversion, Bfloat16RoundsToNearestEven) {
  std::vector<float> values = {
      1.0f,
      floatFromBits(0x3f808000), // a tie between 0x3f80 and 0x3f81: 0x3f80
      floatFromBits(0x3f818000), // a tie between 0x3f81 and 0x3f82: 0x3f82
      floatFromBits(0x3f808001), // just above the tie: 0x3f81
      floatFromBits(0x3f807fff), // just below the tie: 0x3f80
      floatFromBits(0x7f7fffff), // the largest float rounds to infinity
      floatFromBits(0x00000001), // the smallest subnormal float rounds to 0
      floatFromBits(0x00018000), // a subnormal tie: 0x0002
      -0.0f,
      kInf,
      -kInf,
  };
  std::vector<uint16_t> expected = {0x3f80, 0x3f80, 0x3f82, 0x3f81,
                                    0x3f80, 0x7f80, 0x0000, 0x0002,
                                    0x8000, 0x7f80, 0xff80};
  EXPECT_EQ(convertToHalfWords(values, DType::BF16), expected);

  // A NaN whose payload sits only in the low 16 bits must stay a NaN.
  for (uint16_t word : convertToHalfWords(
           {kNaN, floatFromBits(0x7f800001), floatFromBits(0xff800001)},
           DType::BF16))
    EXPECT_TRUE((word & 0x7f80) == 0x7f80 && (word & 0x007f) != 0)
        << std::hex << word << " is not a NaN";
}

TEST(SafetensorsConversion, EveryHalfAndBfloat16WidensExactlyAndBack) {
  std::vector<uint16_t> words(1 << 16);
  for (size_t i = 0; i < words.size(); ++i)
    words[i] = static_cast<uint16_t>(i);
  for (DType dtype : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtypeName(dtype));
    std::vector<float> widened = tensorFromHalfWords(words, dtype).toFloat32();
    std::vector<uint16_t> back = convertToHalfWords(widened, dtype);
    ASSERT_EQ(back.size(), words.size());
    int mismatches = 0;
    for (size_t i = 0; i < words.size(); ++i) {
      uint16_t exponentMask = dtype == DType::F16 ? 0x7c00 : 0x7f80;
      bool isNaN = (words[i] & exponentMask) == exponentMask &&
                   (words[i] & ~exponentMask & 0x7fff) != 0;
      if (isNaN) {
        mismatches += !std::isnan(widened[i]);
        continue;
      }
      mismatches += back[i] != words[i];
    }
    EXPECT_EQ(mismatches, 0);
  }
  // A few exact widenings, subnormal halves among them.
  expectSameFloats(
      tensorFromHalfWords(
          {0x0001, 0x03ff, 0x0400, 0x7bff, 0xfc00, 0x8000, 0x3555}, DType::F16)
          .toFloat32(),
      {std::ldexp(1.0f, -24), 1023 * std::ldexp(1.0f, -24),
       std::ldexp(1.0f, -14), 65504.0f, -kInf, -0.0f, 0.333251953125f});
  expectSameFloats(
      tensorFromHalfWords({0x3f80, 0xc0a0, 0x0001, 0x7f7f}, DType::BF16)
          .toFloat32(),
      {1.0f, -5.0f, floatFromBits(0x00010000), floatFromBits(0x7f7f0000)});
}

TEST(SafetensorsConversion, IntegersTruncateTowardZeroAndRefuseWhatDoesNotFit) {
  std::vector<float> values = {2.99f, -2.99f, 0.5f, -0.5f, 1e9f};
  Tensor i32 = makeTensor("counts", {5}, values.data(), DType::I32);
  std::vector<int32_t> stored(5);
  ASSERT_EQ(i32.data.size(), 20u);
  std::memcpy(stored.data(), i32.data.data(), 20);
  EXPECT_EQ(stored, std::vector<int32_t>({2, -2, 0, 0, 1000000000}));

  for (float bad : {kNaN, kInf, 2147483648.0f, -2147483904.0f}) {
    try {
      makeTensor("counts", {1}, &bad, DType::I32);
      ADD_FAILURE() << bad << " was stored as I32";
    } catch (const CheckpointError &error) {
      EXPECT_THAT(error.what(), HasSubstr("'counts'"));
      EXPECT_THAT(error.what(), HasSubstr("I32"));
    }
  }
  float tooLarge = 9.3e18f;
  EXPECT_THROW(makeTensor("ids", {1}, &tooLarge, DType::I64), CheckpointError);
  float lowest = -9223372036854775808.0f;
  Tensor i64 = makeTensor("ids", {1}, &lowest, DType::I64);
  int64_t storedLowest;
  std::memcpy(&storedLowest, i64.data.data(), 8);
  EXPECT_EQ(storedLowest, INT64_MIN);
}

TEST(SafetensorsTensor, RefusesDataOfTheWrongSizeAndBadShapes) {
  Tensor tensor;
  tensor.name = "layer.0.weight";
  tensor.dtype = DType::F16;
  tensor.shape = {2, 3};
  tensor.data.resize(10);
  try {
    tensor.toFloat32();
    ADD_FAILURE() << "converted 10 bytes as 6 halves";
  } catch (const CheckpointError &error) {
    EXPECT_THAT(error.what(), HasSubstr("'layer.0.weight'"));
    EXPECT_THAT(error.what(), HasSubstr("expected 12 bytes vs found 10 bytes"));
  }
  tensor.shape = {2, -3};
  EXPECT_THROW(tensor.elements(), CheckpointError);
  tensor.shape = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_THROW(tensor.elements(), CheckpointError);
  tensor.shape = {int64_t{1} << 40, 0, int64_t{1} << 40};
  EXPECT_EQ(tensor.elements(), 0);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_STREQ(dtypeName(DType::BF16), "BF16");
}

TEST_F(Safetensors, RefusesBadTensorsOnWrite) {
  std::string path = dir + "/out.safetensors";
  std::vector<float> values = {1, 2, 3};
  Tensor a = makeTensor("a", {3}, values.data());
  auto writeError = [&](const std::vector<Tensor> &tensors) -> std::string {
    try {
      writeSafetensors(path, tensors);
    } catch (const CheckpointError &error) {
      EXPECT_THAT(error.what(), HasSubstr(path));
      return error.what();
    }
    ADD_FAILURE() << "wrote without an error";
    return "";
  };
  EXPECT_THAT(writeError({a, a}), HasSubstr("two tensors are named 'a'"));
  Tensor shortData = a;
  shortData.data.pop_back();
  EXPECT_THAT(writeError({shortData}),
              HasSubstr("expected 12 bytes vs found 11 bytes"));
  Tensor reserved = a;
  reserved.name = "__metadata__";
  EXPECT_THAT(writeError({reserved}), HasSubstr("__metadata__"));
  Tensor negative = a;
  negative.shape = {-3};
  EXPECT_THAT(writeError({negative}), HasSubstr("negative dimension"));
  Tensor badName = a;
  badName.name = "\xff\xfe";
  EXPECT_THAT(writeError({badName}), HasSubstr("UTF-8"));
  EXPECT_EQ(access(path.c_str(), F_OK), -1) << "a refused write left a file";

  std::ofstream(dir + "/plain-file") << "not a directory";
  std::string unwritable = dir + "/plain-file/dir/out.safetensors";
  try {
    writeSafetensors(unwritable, {a});
    ADD_FAILURE() << "wrote below a regular file";
  } catch (const CheckpointError &error) {
    EXPECT_THAT(error.what(), HasSubstr(unwritable));
  }
}

TEST_F(Safetensors, RefusesMissingAndShortFiles) {
  std::string missing = dir + "/missing.safetensors";
  try {
    readSafetensors(missing);
    ADD_FAILURE() << "read a missing file";
  } catch (const CheckpointError &error) {
    EXPECT_THAT(error.what(), HasSubstr(missing));
    EXPECT_THAT(error.what(), HasSubstr("cannot open"));
  }
  EXPECT_THAT(readError(std::string("\x05\0\0\0\0", 5)),
              HasSubstr("too short for a safetensors file"));
  EXPECT_THAT(readError(""), HasSubstr("expected at least 8 bytes vs found 0"));
  std::string cut =
      fileBytes(std::string("{}") + std::string(98, ' '), "").substr(0, 58);
  std::string message = readError(cut);
  EXPECT_THAT(message, HasSubstr("truncated"));
  EXPECT_THAT(message,
              HasSubstr("expected at most 50 header bytes vs found 100"));
  EXPECT_THAT(readError(std::string("\xff\xff\xff\xff\xff\xff\xff\xff{}", 10)),
              HasSubstr("truncated"));
}

TEST_F(Safetensors, RefusesHeadersThatAreNotAJsonObject) {
  EXPECT_THAT(readError(fileBytes(R"({"w": {"dtype": )", "")),
              HasSubstr("header is not valid JSON"));
  EXPECT_THAT(readError(fileBytes("{} trailing", "")),
              HasSubstr("header is not valid JSON"));
  EXPECT_THAT(readError(fileBytes("{\"\xff\": 1}", "")),
              HasSubstr("header is not valid JSON"));
  EXPECT_THAT(readError(fileBytes("", "")),
              HasSubstr("header is not valid JSON"));
  EXPECT_THAT(readError(fileBytes("[1, 2]", "")),
              HasSubstr("header is not a JSON object (expected an object vs "
                        "found array)"));
  EXPECT_THAT(readError(fileBytes(std::string("{") + kValidEntry + "," +
                                      kValidEntry + "}",
                                  kEightBytes)),
              HasSubstr("the key 'w' twice"));
  // An empty header object is a valid file with no tensors.
  std::string path = dir + "/empty.safetensors";
  writeFile(path, fileBytes("{}      ", ""));
  EXPECT_TRUE(readSafetensors(path).tensors.empty());
}

TEST_F(Safetensors, RefusesMalformedEntries) {
  auto entryError = [&](const std::string &entry, size_t dataBytes = 8) {
    return readError(
        fileBytes("{\"w\":" + entry + "}", std::string(dataBytes, '\0')));
  };
  std::string message = entryError("[1]");
  EXPECT_THAT(message, HasSubstr("tensor 'w'"));
  EXPECT_THAT(message, HasSubstr("not an object"));
  EXPECT_THAT(entryError(R"({"shape":[2],"data_offsets":[0,8]})"),
              HasSubstr("tensor 'w': the entry has no \"dtype\""));
  EXPECT_THAT(entryError(R"({"dtype":"F32","data_offsets":[0,8]})"),
              HasSubstr("tensor 'w': the entry has no \"shape\""));
  EXPECT_THAT(entryError(R"({"dtype":"F32","shape":[2]})"),
              HasSubstr("tensor 'w': the entry has no \"data_offsets\""));
  EXPECT_THAT(entryError(R"({"dtype":4,"shape":[2],"data_offsets":[0,8]})"),
              HasSubstr("dtype is not a string (expected a dtype string vs "
                        "found number 4)"));
  EXPECT_THAT(entryError(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})"),
              HasSubstr("shape is not an array"));
  EXPECT_THAT(
      entryError(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})"),
      HasSubstr("not an integer"));
  EXPECT_THAT(
      entryError(R"({"dtype":"F32","shape":["2"],"data_offsets":[0,8]})"),
      HasSubstr("not an integer"));
  EXPECT_THAT(entryError(R"({"dtype":"F32","shape":[2],"data_offsets":8})"),
              HasSubstr("data_offsets is not a pair [begin, end]"));
  EXPECT_THAT(
      entryError(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4,8]})"),
      HasSubstr("data_offsets is not a pair [begin, end]"));
  EXPECT_THAT(
      entryError(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})"),
      HasSubstr("data_offsets begin is negative"));
  EXPECT_THAT(
      entryError(R"({"dtype":"F32","shape":[2],"data_offsets":[0,"8"]})"),
      HasSubstr("data_offsets end is not an integer"));

  message = entryError(R"({"dtype":"F64","shape":[1],"data_offsets":[0,8]})");
  EXPECT_THAT(message, HasSubstr("tensor 'w'"));
  EXPECT_THAT(message, HasSubstr("'F64'"));
  EXPECT_THAT(message, HasSubstr("F32, F16, BF16, I32 or I64"));
  EXPECT_THAT(entryError(R"({"dtype":"f32","shape":[2],"data_offsets":[0,8]})"),
              HasSubstr("'f32' is not supported"));

  message = entryError(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})");
  EXPECT_THAT(message, HasSubstr("negative dimension"));
  EXPECT_THAT(message, HasSubstr("found -2"));

  message = entryError(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})");
  EXPECT_THAT(message, HasSubstr("tensor 'w'"));
  EXPECT_THAT(message, HasSubstr("expected 12 bytes vs found 8 bytes"));

  message = entryError(R"({"dtype":"F32","shape":[0],"data_offsets":[8,0]})");
  EXPECT_THAT(message, HasSubstr("begin after they end"));
  EXPECT_THAT(message, HasSubstr("[8, 0]"));

  message =
      entryError(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})", 8);
  EXPECT_THAT(message, HasSubstr("truncated"));
  EXPECT_THAT(message, HasSubstr("tensor 'w' ends past the end of the data"));
  EXPECT_THAT(message, HasSubstr("8 of them data"));
  EXPECT_THAT(message, HasSubstr("expected data_offsets end <= 8 vs found 16"));
}

TEST_F(Safetensors, RefusesShapesTooLargeToAddress) {
  // 2^31 x 2^31 F32 elements are 2^64 bytes: the product overflows 64 bits.
  std::string message = readError(
      fileBytes(R"({"w":{"dtype":"F32","shape":[2147483648,2147483648],)"
                R"("data_offsets":[0,0]}})",
                ""));
  EXPECT_THAT(message, HasSubstr("tensor 'w'"));
  EXPECT_THAT(message, HasSubstr("too large"));
  EXPECT_THAT(message, HasSubstr("2^62"));
  // 2^61 F32 elements are 2^63 bytes: no overflow, but past the limit.
  EXPECT_THAT(readError(fileBytes(
                  R"({"w":{"dtype":"F32","shape":[2305843009213693952],)"
                  R"("data_offsets":[0,0]}})",
                  "")),
              HasSubstr("too large"));
  EXPECT_THAT(readError(fileBytes(
                  R"({"w":{"dtype":"I64","shape":[18446744073709551615],)"
                  R"("data_offsets":[0,0]}})",
                  "")),
              HasSubstr("too large"));
  EXPECT_THAT(
      readError(fileBytes(R"({"w":{"dtype":"I64","shape":[1],)"
                          R"("data_offsets":[18446744073709551615,7]}})",
                          "")),
      HasSubstr("too large"));
  EXPECT_THAT(
      readError(fileBytes(
          R"({"w":{"dtype":"I64","shape":[1],)"
          R"("data_offsets":[18446744073709551608,18446744073709551615]}})",
          "")),
      HasSubstr("too large"));
}

TEST_F(Safetensors, RefusesOverlappingTensors) {
  std::string message = readError(
      fileBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                std::string(12, '\0')));
  EXPECT_THAT(message, HasSubstr("'a' and 'b' overlap"));
  EXPECT_THAT(message, HasSubstr("begin at 8 or later vs found 4"));
  // Two tensors on the same bytes.
  EXPECT_THAT(readError(fileBytes(
                  R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})",
                  std::string(8, '\0'))),
              HasSubstr("overlap"));
  // An empty tensor inside another's bytes overlaps nothing.
  std::string path = dir + "/empty-inside.safetensors";
  writeFile(
      path,
      fileBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                std::string(8, '\0')));
  EXPECT_EQ(readSafetensors(path).tensors.size(), 2u);
}

TEST_F(Safetensors, RefusesMetadataThatIsNotStringToString) {
  EXPECT_THAT(readError(fileBytes(R"({"__metadata__":["a"]})", "")),
              HasSubstr("__metadata__ is not an object (expected an object of "
                        "strings vs found array)"));
  std::string message =
      readError(fileBytes(R"({"__metadata__":{"step":100}})", ""));
  EXPECT_THAT(message, HasSubstr("'step'"));
  EXPECT_THAT(message, HasSubstr("not a string (expected a string vs found "
                                 "number 100)"));
}

TEST_F(Safetensors, RefusesAnotherFormatVersion) {
  std::string message = readError(
      fileBytes(R"({"__metadata__":{"ferry.format_version":"2"}})", ""));
  EXPECT_THAT(message, HasSubstr("version '2'"));
  EXPECT_THAT(message, HasSubstr("reads only version 1"));
}

TEST_F(Safetensors, RefusesDeeplyNestedJsonWithoutExhaustingTheStack) {
  const size_t depth = 200000;
  std::string nested = std::string(depth, '[') + std::string(depth, ']');
  EXPECT_THAT(readError(fileBytes(nested, "")), HasSubstr("not a JSON object"));
  EXPECT_THAT(readError(fileBytes("{\"w\":" + nested + "}", "")),
              HasSubstr("tensor 'w': the header entry is not an object"));
  EXPECT_THAT(readError(fileBytes(R"({"w":{"dtype":"F32","shape":)" + nested +
                                      R"(,"data_offsets":[0,0]}})",
                                  "")),
              HasSubstr("not an integer (expected a non-negative integer vs "
                        "found array [[[...]]])"));
  EXPECT_THAT(
      readError(fileBytes(R"({"__metadata__":{"m":)" + nested + "}}", "")),
      HasSubstr("not a string"));
  EXPECT_THAT(readError(fileBytes(std::string(depth, '{'), "")),
              HasSubstr("not valid JSON"));
}

TEST_F(Safetensors, DetectsAFlippedDataByte) {
  std::string bytes = smallValidFile();
  uint64_t dataStart = 8 + headerLengthOf(bytes);
  ASSERT_LT(dataStart + 5, bytes.size());
  std::string corrupted = bytes;
  corrupted[dataStart + 5] ^= 0x10;
  std::string message = readError(corrupted);
  EXPECT_THAT(message, HasSubstr("corrupted"));
  std::string path = dir + "/ok.safetensors";
  writeFile(path, bytes);
  std::string stored = readSafetensors(path).metadata.at("ferry.xxh64");
  EXPECT_THAT(message, HasSubstr("expected " + stored + " vs found "));
  // A flip in the checksum itself is caught the same way.
  std::string badChecksum = bytes;
  size_t at = badChecksum.find(stored);
  ASSERT_NE(at, std::string::npos);
  badChecksum[at] = badChecksum[at] == '0' ? '1' : '0';
  EXPECT_THAT(readError(badChecksum), HasSubstr("corrupted"));
}

TEST_F(Safetensors, TruncationAtAnyLengthIsRefused) {
  std::string bytes = smallValidFile();
  int refused = 0;
  int tried = 0;
  for (size_t length = 0; length < bytes.size(); length += 7) {
    ++tried;
    readExpectingNoCrash(bytes.substr(0, length),
                         "cut at " + std::to_string(length), refused);
  }
  ++tried;
  readExpectingNoCrash(bytes.substr(0, bytes.size() - 1), "last byte cut",
                       refused);
  EXPECT_EQ(refused, tried) << "a truncated file was read without an error";
}

TEST_F(Safetensors, FlippedHeaderBytesNeverCrash) {
  std::string bytes = smallValidFile();
  size_t headerEnd = 8 + headerLengthOf(bytes);
  int errors = 0;
  for (size_t at = 0; at < headerEnd; ++at) {
    for (unsigned char mask : {0x01, 0x20, 0x80, 0xff}) {
      std::string flipped = bytes;
      flipped[at] = static_cast<char>(flipped[at] ^ mask);
      readExpectingNoCrash(
          flipped, "byte " + std::to_string(at) + " ^ " + std::to_string(mask),
          errors);
    }
  }
  // Random bytes written over a few random places, including ones that are
  // JSON punctuation.
  std::mt19937 random(12345);
  const char tokens[] = "{}[]\",:-0123456789eE. \\u";
  for (int round = 0; round < 1000; ++round) {
    std::string mutated = bytes;
    int changes = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < changes; ++i) {
      size_t at = random() % headerEnd;
      mutated[at] = round % 2 ? static_cast<char>(random() & 0xff)
                              : tokens[random() % (sizeof tokens - 1)];
    }
    readExpectingNoCrash(mutated, "round " + std::to_string(round), errors);
  }
  EXPECT_GT(errors, 0);
}
