// TensorBoard event files: TFRecord-framed tensorflow.Event protos
// (TensorBoardWriter.h).
#include "training/metrics/TensorBoardWriter.h"

#include "runtime/Error.h"
#include "training/data/Crc32c.h"
#include "training/metrics/tensorboard_event.pb.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace ferry {
namespace {

double wallSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0')
    return "localhost";
  return name;
}

} // namespace

TensorBoardWriter::TensorBoardWriter(const std::string &dir) {
  std::string stem = dir + (dir.empty() || dir.back() == '/' ? "" : "/") +
                     "events.out.tfevents.";
  double now = wallSeconds();
  path_ = stem + std::to_string(static_cast<int64_t>(now)) + "." +
          hostName() + "." + std::to_string(getpid()) + ".ferry";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    throw RuntimeError("--tensorboard " + dir +
                       ": cannot create the directory (" + error.message() +
                       "); name a directory that can be made");
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_)
    throw RuntimeError("--tensorboard " + dir + ": cannot create " + path_ +
                       ": " + std::strerror(errno));
  tensorflow::Event event;
  event.set_wall_time(now);
  event.set_file_version("brain.Event:2");
  writeRecord(event.SerializeAsString());
}

void TensorBoardWriter::write(
    int64_t step, const std::vector<std::pair<std::string, double>> &scalars) {
  tensorflow::Event event;
  event.set_wall_time(wallSeconds());
  event.set_step(step);
  tensorflow::Summary *summary = event.mutable_summary();
  for (const auto &[tag, value] : scalars) {
    tensorflow::Summary::Value *entry = summary->add_value();
    entry->set_tag(tag);
    entry->set_simple_value(static_cast<float>(value));
  }
  writeRecord(event.SerializeAsString());
}

void TensorBoardWriter::writeRecord(const std::string &data) {
  std::string record;
  data::appendTfRecord(record, data);
  out_ << record;
  out_.flush();
  if (!out_)
    throw RuntimeError("cannot write TensorBoard events to " + path_ + ": " +
                       std::strerror(errno));
}

} // namespace ferry
