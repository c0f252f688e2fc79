// A program's inputs and metrics by state name ("input.input_ids",
// "metric.loss"), with the checks every caller wants: the state exists and
// holds exactly the bytes given. What the trainer and `ferry squad` feed
// programs with.
#pragma once

#include "runtime/Error.h"
#include "runtime/backend/Backend.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace ferry {

template <typename T>
void writeInput(Backend &backend, const std::string &name,
                const std::vector<T> &values) {
  const fxe::State *s = backend.state(name);
  if (!s)
    throw RuntimeError("the executable has no input '" + name +
                       "'; recompile it with this ferry (`ferry compile`)");
  if (static_cast<size_t>(s->bytes()) != values.size() * sizeof(T))
    throw RuntimeError(fmt::format(
        "input '{}' holds {} bytes, the batch has {}: the executable was "
        "compiled for another batch or sequence shape",
        name, s->bytes(), values.size() * sizeof(T)));
  backend.write(s, 0, values.data(), s->bytes());
}

inline float readMetric(Backend &backend, const std::string &name) {
  const fxe::State *s = backend.state(name);
  if (!s)
    throw RuntimeError("the executable has no metric '" + name +
                       "'; recompile it with this ferry (`ferry compile`)");
  return backend.scalar(s);
}

} // namespace ferry
