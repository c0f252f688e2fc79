// `ferry train --tensorboard DIR`: TensorBoard event files. A file is a
// sequence of TFRecord records (length, masked CRC32C of the length, data,
// masked CRC32C of the data), each a tensorflow.Event proto: first the file
// version, then one Event per update carrying that update's scalars, so the
// run opens in TensorBoard (and anything that reads its event files) as a
// Megatron-LM or DeepSpeed run does.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace ferry {

class TensorBoardWriter {
public:
  // Creates DIR (and its parents) and a new events.out.tfevents.<seconds>.
  // <host>.<pid>.ferry file in it; a resumed run adds a file beside the
  // earlier ones, and TensorBoard joins them by step. Throws RuntimeError
  // naming the path when it cannot.
  explicit TensorBoardWriter(const std::string &dir);

  const std::string &path() const { return path_; }

  // One Event at `step` holding each (tag, value) as a scalar; written and
  // flushed before it returns, so a killed run keeps every update it logged.
  void write(int64_t step,
             const std::vector<std::pair<std::string, double>> &scalars);

private:
  void writeRecord(const std::string &data);

  std::string path_;
  std::ofstream out_;
};

} // namespace ferry
