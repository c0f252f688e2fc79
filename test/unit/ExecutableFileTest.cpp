// The .fxe container: a payload written with writeExecutableFile reads back
// verified; a flipped byte, a truncated file, another format version and a
// foreign file are each refused with a message naming the file and the fix.
#include "runtime/executable/ExecutableFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

using namespace ferry;

namespace {

std::vector<uint8_t> smallExecutable() {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<int64_t> shape = {2, 3};
  auto state = fxe::CreateState(fbb, fbb.CreateString("w"), fxe::Role_Parameter,
                                0, 24, fbb.CreateVector(shape), fxe::DType_F32,
                                fxe::Init_Normal, 0.02, fbb.CreateString("w"));
  std::vector<flatbuffers::Offset<fxe::State>> states = {state};
  std::vector<flatbuffers::Offset<fxe::Program>> programs;
  auto root = fxe::CreateExecutable(
      fbb, fbb.CreateString("test"), fbb.CreateString("model: {}\n"),
      fbb.CreateString("cpu"), 64, 64, 64, 6, fbb.CreateVector(states),
      fbb.CreateVector(programs));
  fbb.Finish(root);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

std::string tempPath(const char *name) {
  return ::testing::TempDir() + "/" + name + "-" + std::to_string(getpid()) +
         ".fxe";
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeAll(const std::string &path, const std::string &data) {
  std::ofstream(path, std::ios::binary) << data;
}

std::string loadError(const std::string &path) {
  try {
    ExecutableFile::load(path);
  } catch (const ExecutableError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(ExecutableFile, RoundTrip) {
  std::string path = tempPath("roundtrip");
  std::vector<uint8_t> payload = smallExecutable();
  writeExecutableFile(path, payload);
  ExecutableFile file = ExecutableFile::load(path);
  EXPECT_EQ(file.payloadBytes(), payload.size());
  EXPECT_EQ(file.root().backend()->str(), "cpu");
  EXPECT_EQ(file.root().parameter_count(), 6);
  ASSERT_EQ(file.root().states()->size(), 1u);
  EXPECT_EQ(file.root().states()->Get(0)->name()->str(), "w");
  std::remove(path.c_str());
}

TEST(ExecutableFile, FlippedByteIsCorrupted) {
  std::string path = tempPath("flipped");
  writeExecutableFile(path, smallExecutable());
  std::string data = readAll(path);
  data[40] ^= 0x5a;
  writeAll(path, data);
  std::string error = loadError(path);
  EXPECT_NE(error.find("is corrupted: checksum"), std::string::npos) << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("recompile it"), std::string::npos) << error;
  std::remove(path.c_str());
}

TEST(ExecutableFile, TruncatedFile) {
  std::string path = tempPath("truncated");
  writeExecutableFile(path, smallExecutable());
  std::string data = readAll(path);
  writeAll(path, data.substr(0, data.size() - 7));
  std::string error = loadError(path);
  EXPECT_NE(error.find("is truncated or has trailing bytes"), std::string::npos)
      << error;
  std::remove(path.c_str());
}

TEST(ExecutableFile, OtherFormatVersion) {
  std::string path = tempPath("version");
  writeExecutableFile(path, smallExecutable());
  std::string data = readAll(path);
  data[8] = 7;
  writeAll(path, data);
  std::string error = loadError(path);
  EXPECT_NE(error.find("has executable format version 7, this ferry reads "
                       "version 4"),
            std::string::npos)
      << error;
  std::remove(path.c_str());
}

TEST(ExecutableFile, ForeignFileAndMissingFile) {
  std::string path = tempPath("foreign");
  writeAll(path, "model:\n  layers: 2\n this is YAML, not an executable\n");
  EXPECT_NE(loadError(path).find("is not a ferry executable"),
            std::string::npos);
  std::remove(path.c_str());
  EXPECT_NE(loadError(path).find("cannot open executable"), std::string::npos);
}

TEST(ExecutableFile, ValidChecksumBadStructure) {
  // A payload whose checksum is right but which is not a FlatBuffer
  // Executable: the verifier refuses it.
  std::string path = tempPath("structure");
  std::vector<uint8_t> junk(64, 0xff);
  writeExecutableFile(path, junk);
  EXPECT_NE(loadError(path).find("does not verify"), std::string::npos);
  std::remove(path.c_str());
}

TEST(ExecutableFile, MissingProgramsAreRefused) {
  // Verifies as a FlatBuffer (fields are optional) but cannot run.
  flatbuffers::FlatBufferBuilder fbb;
  auto root =
      fxe::CreateExecutable(fbb, fbb.CreateString("test"), fbb.CreateString(""),
                            fbb.CreateString("cpu"));
  fbb.Finish(root);
  std::string path = tempPath("noprograms");
  writeExecutableFile(
      path, {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()});
  EXPECT_NE(loadError(path).find("has no states or programs"),
            std::string::npos)
      << loadError(path);
  std::remove(path.c_str());
}
