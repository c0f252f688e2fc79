// Joining the replica group and failing as a group (ReplicaRun.h).
#include "tools/ferry/ReplicaRun.h"

#include <fmt/format.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

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
  // A subgroup's message names the job's rank and its own ("rank 3/4
  // (tensor 1/2): ..."): printed as it is.
  else if (!prefix.empty() &&
           message.rfind(prefix.substr(0, prefix.size() - 2) + " (", 0) == 0)
    prefix.clear();
  std::fprintf(stderr, "ferry: error: %s%s\n", prefix.c_str(), message.c_str());
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

void ReplicaRun::checkSameRun(const ExecutableFile &exe, const Config &config,
                              int64_t steps) {
  if (group->size() == 1)
    return;
  std::string mine = fmt::format(
      "executable {:016x}, config {:016x}, steps {}", exe.checksum(),
      std::hash<std::string>{}(config.canonicalText()), steps);
  std::vector<std::string> all =
      comm::gatherText(*group, mine, "the start-up comparison of the ranks");
  std::string differ;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      differ += fmt::format("\n  rank {}: {}", r, all[r]);
  if (!differ.empty())
    throw RuntimeError(fmt::format(
        "{}the ranks were not started with the same executable, config and "
        "--steps (rank 0: {}); differing:{}\nstart every rank with the same "
        "command line and the same files",
        group->prefix(), all[0], differ));
}

ReplicaRun::~ReplicaRun() {
  if (out && out != stdout)
    std::fclose(out);
}

} // namespace ferry::cli
