// The commands that run programs (`ferry train`, `ferry eval`, `ferry
// squad train|predict`, `ferry devices`) live in libferry-run.so with the runtime they need (backends,
// kernels, data readers, checkpoints: OpenBLAS, OpenMP, HDF5, protobuf,
// MPI). The `ferry` executable parses every command's flags itself and
// opens this module only for those three, so `--version`, `compile`,
// `plan`, `inspect` and `cache` start without mapping those libraries.
#pragma once

#include "tools/ferry/LoadExecutable.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace ferry::cli {

struct TrainOptionsCli {
  CompileFlags compile;
  std::string input;
  std::vector<std::string> overrides;
  std::string data;
  int64_t steps = 0;
  int64_t logEvery = 10;
  std::string metrics, tensorboard;
  std::string initCheckpoint, save, resume;
  bool saveInitial = false;
  bool profile = false;
};

struct EvalOptionsCli {
  CompileFlags compile;
  std::string input;
  std::vector<std::string> overrides;
  std::string checkpoint, data, json;
  std::string outputs; // safetensors of the per-sample outputs ("" = none)
  int64_t samples = 0;
};

// `ferry squad train` and `ferry squad predict`.
struct SquadOptionsCli {
  CompileFlags compile;
  std::string input; // a config (model.task squad is set)
  std::vector<std::string> overrides;
  std::string data, vocab; // the SQuAD v1.1 JSON file, vocab.txt
  bool cased = false;
  int64_t docStride = 128, maxQueryLength = 64;
  // train
  std::string initCheckpoint, resume, save, metrics;
  int64_t epochs = 2, logEvery = 10;
  double warmupProportion = 0.1;
  // predict
  std::string checkpoint, output = ".";
  int64_t nBest = 20, maxAnswerLength = 30;
  bool evaluate = false;
};

struct RunApi {
  const char *build;       // FERRY_VERSION " (" FERRY_GIT_HASH ")" of its build
  std::size_t optionsSize; // sizeof of the three options structs
  int (*train)(const TrainOptionsCli &options);
  int (*eval)(const EvalOptionsCli &options);
  int (*devices)(); // `ferry devices`
  int (*squadTrain)(const SquadOptionsCli &options);
  int (*squadPredict)(const SquadOptionsCli &options);
};

#define FERRY_RUN_MODULE_ENTRY "ferry_run_api"
#define FERRY_RUN_MODULE_FILE "libferry-run.so"

// The run commands linked into this program, else libferry-run.so beside
// the executable (or in its ../lib/ferry), opened once and globally (the
// CUDA backend module takes the runtime's symbols from it). Null, with the
// reason in `why`, when neither is there or the module is another build's.
const RunApi *openRunModule(std::string &why);

// Runs `command` of the run module on `options`, or says why the module is
// not there (exit code 1).
template <typename Options>
int runInModule(int (*RunApi::*command)(const Options &),
                const Options &options);

int runTrain(const TrainOptionsCli &opts);
int runEval(const EvalOptionsCli &opts);
int runSquadTrain(const SquadOptionsCli &opts);
int runSquadPredict(const SquadOptionsCli &opts);

template <typename Options>
int runInModule(int (*RunApi::*command)(const Options &),
                const Options &options) {
  std::string why;
  const RunApi *run = openRunModule(why);
  if (!run) {
    std::fprintf(stderr, "ferry: error: %s\n", why.c_str());
    return 1;
  }
  return (run->*command)(options);
}

} // namespace ferry::cli
