// Reads `ferry train --metrics FILE.jsonl` back for `ferry report`: one JSON
// object per line, each with the update's `step` and its numbers. A resumed
// run appends to the file; when it went back to an earlier checkpoint, the
// later record of a step replaces the earlier one, as TensorBoard does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ferry {

struct MetricsRun {
  std::string path;
  std::string name; // the file's name without .jsonl, for legends
  // key ("loss", "eval_mlm_accuracy", ...) -> (step, value) in step order;
  // null values (an fp16 update's overflowed grad_norm) are left out.
  std::map<std::string, std::vector<std::pair<int64_t, double>>> series;
  int64_t records = 0; // lines read
  int64_t firstStep = 0, lastStep = 0;

  const std::vector<std::pair<int64_t, double>> *find(const std::string &key) const {
    auto it = series.find(key);
    return it == series.end() || it->second.empty() ? nullptr : &it->second;
  }
};

// Throws std::runtime_error naming the file, the line and the field, with
// what was expected.
MetricsRun readMetricsFile(const std::string &path);

} // namespace ferry
