//===- PipelineOptions.cpp - printing the pipelines' options --------------===//
//
// No MLIR or LLVM here: the runtime-only build's cache lookup links it.
//
//===----------------------------------------------------------------------===//

#include "passes/PipelineOptions.h"

using namespace ferry;

std::string ferry::optionText(bool value) { return value ? "true" : "false"; }

std::string ferry::optionText(int64_t value) { return std::to_string(value); }

std::string ferry::optionText(const ByteBudget &value) {
  return value ? std::to_string(*value) : "none";
}

std::string ferry::optionText(MatmulPrecision value) {
  switch (value) {
  case MatmulPrecision::fp32:
    return "fp32";
  case MatmulPrecision::bf16:
    return "bf16";
  case MatmulPrecision::fp16:
    return "fp16";
  }
  return "fp32";
}

std::string ferry::optionText(const std::string &value) { return value; }

std::string ferry::optionText(const std::vector<std::string> &value) {
  std::string text;
  for (const std::string &v : value)
    text += (text.empty() ? "" : ",") + v;
  return text;
}

std::vector<std::pair<std::string, std::string>>
PipelineOptions::fields() const {
  std::vector<std::pair<std::string, std::string>> out;
#define FERRY_PIPELINE_OPTION(TYPE, FIELD, FLAG, ...)                         \
  out.emplace_back(FLAG, optionText(FIELD));
#define FERRY_PIPELINE_LIST_OPTION(FIELD, FLAG, DESCRIPTION)                  \
  out.emplace_back(FLAG, optionText(FIELD));
#include "passes/PipelineOptions.def"
  return out;
}
