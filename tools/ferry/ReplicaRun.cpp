// Joining the replica group and failing as a group (ReplicaRun.h).
#include "tools/ferry/ReplicaRun.h"

#include <cstdlib>
#include <string>

namespace ferry::cli {

void ReplicaRun::join() {
  group = comm::openReplicaGroup();
  if (group->rank() != 0) {
    out = std::fopen("/dev/null", "w");
    if (!out)
      out = stdout;
    setenv("FERRY_PROGRESS", "off", 1);
  }
}

void ReplicaRun::fail(const std::exception &e) {
  // ConfigError, ExecutableError, DataError, CheckpointError and
  // RuntimeError all carry a message that names the file and the fix.
  std::string prefix = group ? group->prefix() : "";
  std::string message = e.what();
  if (!prefix.empty() && message.rfind(prefix, 0) == 0)
    message = message.substr(prefix.size());
  std::fprintf(stderr, "ferry: error: %s%s\n", prefix.c_str(),
               message.c_str());
  std::fflush(stderr);
  if (group && group->size() > 1) {
    // A rank alone cannot finish a collective step: tell the others why
    // (unless this is their news), then end the job.
    if (!dynamic_cast<const comm::PeerFailedError *>(&e))
      group->notifyFailure(prefix + message);
    group->abortJob(1);
  }
}

void ReplicaRun::failPrinted(const char *what) {
  if (group && group->size() > 1) {
    group->notifyFailure(group->prefix() + what);
    group->abortJob(1);
  }
}

ReplicaRun::~ReplicaRun() {
  if (out && out != stdout)
    std::fclose(out);
}

} // namespace ferry::cli
