// SIGINT / SIGTERM handling for the training loop; see StopSignals.h.
#include "training/train/StopSignals.h"

#include <atomic>
#include <csignal>

namespace {

std::atomic<int> stopRequested{0};

extern "C" void onStopSignal(int signal) {
  stopRequested.store(signal);
  // A second signal ends the process the default way.
  std::signal(signal, SIG_DFL);
}

} // namespace

void ferry::installStopHandlers() {
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
}

int ferry::stopSignalReceived() { return stopRequested.load(); }
