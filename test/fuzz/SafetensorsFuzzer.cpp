// libFuzzer target: the safetensors reader (header JSON, offsets, dtypes,
// the ferry.xxh64 checksum, the tensors' bytes).
#include "training/checkpoint/Safetensors.h"
#include "test/fuzz/FuzzFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = ferry::fuzz::scratchPath(".safetensors");
  ferry::fuzz::writeInput(path, data, size);
  try {
    ferry::ckpt::SafetensorsFile file = ferry::ckpt::readSafetensors(path);
    // Touch what a caller touches: every tensor's bytes and its lookup.
    for (const ferry::ckpt::Tensor &t : file.tensors) {
      if (file.find(t.name) == nullptr)
        __builtin_trap(); // a listed tensor must be found by its name
      if (t.elements() < (1 << 20))
        (void)t.toFloat32();
    }
  } catch (const ferry::ckpt::CheckpointError &) {
  }
  return 0;
}
