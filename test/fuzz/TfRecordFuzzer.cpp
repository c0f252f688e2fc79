// libFuzzer target: the TFRecord reader (record framing, both CRC32Cs, the
// tf.Example protos, every feature's values).
#include "test/fuzz/SampleFileFuzzer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = ferry::fuzz::scratchPath(".tfrecord");
  return ferry::fuzz::readSampleFile(data, size, path,
                                     ferry::data::openTfRecord);
}
