// The metrics file reader (MetricsFile.h), with nlohmann::json per line.
#include "tools/ferry/reports/MetricsFile.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace ferry {

MetricsRun readMetricsFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error(path + ": cannot read (" + std::strerror(errno) +
                             "); name a file written by ferry train --metrics");
  MetricsRun run;
  run.path = path;
  run.name = std::filesystem::path(path).stem().string();
  // step -> key -> value; a later record of a step replaces the earlier.
  std::map<int64_t, std::map<std::string, double>> byStep;
  std::string line;
  int64_t lineNumber = 0;
  while (std::getline(in, line)) {
    ++lineNumber;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    std::string where = path + ":" + std::to_string(lineNumber);
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object())
      throw std::runtime_error(
          where + ": not a JSON object; ferry train --metrics writes one "
                  "object per line (a run killed mid-line leaves a partial "
                  "last line: delete it)");
    auto step = record.find("step");
    if (step == record.end() || !step->is_number_integer() ||
        step->get<int64_t>() < 1)
      throw std::runtime_error(
          where + ": field 'step' is " +
          (step == record.end() ? std::string("missing") : step->dump()) +
          "; every record needs the update's step, an integer from 1");
    std::map<std::string, double> &values = byStep[step->get<int64_t>()];
    values.clear();
    for (auto it = record.begin(); it != record.end(); ++it) {
      if (it.key() == "step" || it->is_null() || it->is_boolean())
        continue;
      if (!it->is_number())
        throw std::runtime_error(where + ": field '" + it.key() + "' is " +
                                 it->dump() + "; expected a number");
      values[it.key()] = it->get<double>();
    }
    ++run.records;
  }
  if (byStep.empty())
    throw std::runtime_error(path + ": has no records; train with --metrics " +
                             path + " first");
  for (const auto &[step, values] : byStep)
    for (const auto &[key, value] : values)
      run.series[key].emplace_back(step, value);
  run.firstStep = byStep.begin()->first;
  run.lastStep = byStep.rbegin()->first;
  return run;
}

} // namespace ferry
