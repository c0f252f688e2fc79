// libferry-run.so's entry point (RunApi.h): the run commands, and `ferry
// devices`, which opens the backend modules.
#include "tools/ferry/RunApi.h"

#include "ferry/Version.h"
#include "runtime/BuildInfo.h"

#include <cstdio>

namespace {

int devices() {
  std::fputs(ferry::describeDevices().c_str(), stdout);
  return 0;
}

const ferry::cli::RunApi kRunApi = {
    FERRY_VERSION " (" FERRY_GIT_HASH ")",
    sizeof(ferry::cli::TrainOptionsCli) + sizeof(ferry::cli::EvalOptionsCli) +
        sizeof(ferry::cli::SquadOptionsCli),
    ferry::cli::runTrain,
    ferry::cli::runEval,
    devices,
    ferry::cli::runSquadTrain,
    ferry::cli::runSquadPredict};

} // namespace

extern "C" __attribute__((visibility("default"))) const ferry::cli::RunApi *
ferry_run_api() {
  return &kRunApi;
}
