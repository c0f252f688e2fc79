// libFuzzer target: the executable loader and validator: the .fxe header
// (magic, version, size, checksum), the FlatBuffer's structure, every state
// and instruction (validateExecutable), each kernel call's reach
// (checkKernelCall) and the embedded config. The checksum stops most
// mutations at the header, so the target also reads the input as a bare
// payload with a correct header put in front (ExecutableFile::fromPayload).
#include "runtime/Error.h"
#include "training/config/Config.h"
#include "runtime/executable/ExecutableFile.h"
#include "runtime/executable/Validate.h"
#include "test/fuzz/FuzzFile.h"

#include <vector>

namespace {

void useExecutable(const ferry::ExecutableFile &file) {
  const ferry::fxe::Executable &exe = file.root();
  ferry::validateExecutable(exe, std::nullopt);
  // What a backend checks before each call, with every register 0 (the
  // first iteration of every loop).
  for (const ferry::fxe::Program *p : *exe.programs()) {
    std::vector<int64_t> registers(static_cast<size_t>(p->registers()), 0);
    for (const ferry::fxe::Instr *in : *p->instrs())
      if (in->loop_count() == 0)
        ferry::checkKernelCall(*in, registers);
  }
  ferry::parseConfig(exe.config_yaml()->str(), "embedded config", {});
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = ferry::fuzz::scratchPath(".fxe");
  ferry::fuzz::writeInput(path, data, size);
  try {
    useExecutable(ferry::ExecutableFile::load(path));
  } catch (const ferry::ExecutableError &) {
  } catch (const ferry::RuntimeError &) {
  } catch (const ferry::ConfigError &) {
  }
  // The same bytes as a payload past the header (skipping a header the
  // input may carry, so seeds are real .fxe files).
  size_t skip = size >= 32 ? 32 : 0;
  try {
    useExecutable(ferry::ExecutableFile::fromPayload(
        std::vector<uint8_t>(data + skip, data + size), "fuzz payload"));
  } catch (const ferry::ExecutableError &) {
  } catch (const ferry::RuntimeError &) {
  } catch (const ferry::ConfigError &) {
  }
  return 0;
}
