// What `ferry train` and `ferry eval` share as replicas: joining the group
// the launcher started (one process without one), rank 0 speaking for it,
// and taking the whole job down, with a message on every rank, when one
// rank fails. Built into libferry-run.so.
#pragma once

#include "runtime/comm/Communicator.h"
#include "training/config/Config.h"
#include "runtime/executable/ExecutableFile.h"

#include <cstdio>
#include <exception>
#include <memory>

namespace ferry::cli {

struct ReplicaRun {
  std::unique_ptr<comm::Communicator> group;
  std::FILE *out = stdout; // rank 0: stdout; the others: /dev/null

  // Joins the group; ranks other than 0 print only errors (and no progress).
  void join();
  // Prints `e` prefixed with this rank; with several ranks, tells the
  // others (unless it is their news) and ends the job (MPI_Abort).
  void fail(const std::exception &e);
  // Ends the job after an error that was printed already.
  void failPrinted(const char *what);
  // Every rank must run the same executable with the same run-time config
  // and length, or their collectives would not match: throws naming the
  // ranks that differ from rank 0.
  void checkSameRun(const ExecutableFile &exe, const Config &config,
                    int64_t steps);
  ~ReplicaRun();
};

} // namespace ferry::cli
