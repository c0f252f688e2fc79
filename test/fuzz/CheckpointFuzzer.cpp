// libFuzzer target: a training checkpoint's step directory as --resume reads
// it: trainer.json (checksum, every field), optimizer.safetensors and
// model.safetensors imported into a small executable's states, and the
// resume's config comparison. One input packs the three files:
//
//   u32 n, n bytes of trainer.json, u32 m, m bytes of optimizer.safetensors,
//   the rest: model.safetensors            (u32 little-endian)
//
// scripts/fuzz.sh packs real checkpoints this way for the seeds, and names
// the executable they belong to in FERRY_FUZZ_EXECUTABLE.
#include "runtime/backend/Registry.h"
#include "training/checkpoint/Checkpoint.h"
#include "training/config/Config.h"
#include "runtime/executable/ExecutableFile.h"
#include "training/train/ResumeCheck.h"
#include "test/fuzz/FuzzFile.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

namespace {

std::optional<ferry::ExecutableFile> executable;
std::unique_ptr<ferry::Backend> backend;
ferry::Config config;

// The next u32-length-prefixed part of the input, or nullopt.
std::optional<std::pair<const uint8_t *, size_t>>
takePart(const uint8_t *&data, size_t &size) {
  uint32_t n = 0;
  if (size < 4)
    return std::nullopt;
  std::memcpy(&n, data, 4);
  if (n > size - 4)
    return std::nullopt;
  auto part = std::make_pair(data + 4, static_cast<size_t>(n));
  data += 4 + n;
  size -= 4 + n;
  return part;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *path = std::getenv("FERRY_FUZZ_EXECUTABLE");
  if (!path || !*path) {
    std::fprintf(stderr, "CheckpointFuzzer: set FERRY_FUZZ_EXECUTABLE to the "
                         ".fxe the seed checkpoints belong to "
                         "(scripts/fuzz.sh does)\n");
    std::exit(2);
  }
  ferry::registerBuiltinBackends();
  executable = ferry::ExecutableFile::load(path);
  config = ferry::parseConfig(executable->root().config_yaml()->str(), path,
                              {});
  backend = ferry::createBackend(executable->root(), std::nullopt);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string dir = ferry::fuzz::scratchPath(".step");
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  auto trainer = takePart(data, size);
  auto optimizer = trainer ? takePart(data, size) : std::nullopt;
  if (!optimizer)
    return -1; // not a packed checkpoint: keep it out of the corpus
  ferry::fuzz::writeInput(dir + "/trainer.json", trainer->first,
                          trainer->second);
  ferry::fuzz::writeInput(dir + "/optimizer.safetensors", optimizer->first,
                          optimizer->second);
  ferry::fuzz::writeInput(dir + "/model.safetensors", data, size);
  try {
    ferry::ckpt::TrainerState state = ferry::ckpt::loadCheckpoint(
        ferry::ckpt::resolveCheckpointDir(dir), executable->root(), *backend);
    (void)ferry::changedKeys(state.configText, config.canonicalText());
  } catch (const ferry::ckpt::CheckpointError &) {
  }
  return 0;
}
