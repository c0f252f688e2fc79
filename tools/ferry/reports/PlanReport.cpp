// Formats the compiler's phase plan (Executable.fbs: Program.phases).
#include "tools/ferry/reports/PlanReport.h"
#include "runtime/ByteSize.h"

#include "training/config/Config.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

using namespace ferry;

std::string ferry::phasePlanTable(const fxe::Executable &exe,
                                  const std::string &program) {
  const fxe::Program *p = nullptr;
  for (const fxe::Program *q : *exe.programs())
    if (q->name()->str() == program)
      p = q;
  if (!p || !p->phases() || p->phases()->size() == 0)
    return "";
  // With replicas, a column of what each replica sends per run of a phase.
  bool replicas = p->collective_bytes() > 0;
  auto collective = [&](int64_t bytes) {
    return replicas ? fmt::format("{:>13}", formatByteSize(bytes))
                    : std::string();
  };
  std::string out = fmt::format("{:<20}{:>6}{:>13}{:>13}{:>13}{:>13}{}\n",
                                "phase (" + program + ")", "runs", "host->dev",
                                "dev->host", "matmul GF", "peak device",
                                replicas ? fmt::format("{:>13}", "collective")
                                         : "");
  int64_t in = 0, outBytes = 0, peak = 0, sent = 0;
  double flops = 0;
  for (const fxe::Phase *ph : *p->phases()) {
    out += fmt::format("{:<20}{:>6}{:>13}{:>13}{:>13.3f}{:>13}{}\n",
                       ph->name()->str(), ph->executions(),
                       formatByteSize(ph->bytes_in()),
                       formatByteSize(ph->bytes_out()), ph->flops() / 1e9,
                       formatByteSize(ph->peak_bytes()),
                       collective(ph->collective_bytes()));
    in += ph->bytes_in();
    outBytes += ph->bytes_out();
    flops += ph->flops();
    sent += ph->collective_bytes();
    peak = std::max<int64_t>(peak, ph->peak_bytes());
  }
  out += fmt::format("{:<20}{:>6}{:>13}{:>13}{:>13.3f}{:>13}{}\n", "total", "",
                     formatByteSize(in), formatByteSize(outBytes), flops / 1e9,
                     formatByteSize(peak), collective(sent));
  return out;
}

std::string ferry::bufferTable(const fxe::Executable &exe) {
  std::vector<const fxe::State *> states(exe.states()->begin(),
                                         exe.states()->end());
  std::stable_sort(states.begin(), states.end(),
                   [](const fxe::State *a, const fxe::State *b) {
                     return a->bytes() > b->bytes();
                   });
  std::string out = fmt::format("{:<48}{:<16}{:>13}  {}\n", "state", "role",
                                "bytes", "lives");
  for (const fxe::State *s : states)
    out += fmt::format("{:<48}{:<16}{:>13}  {}\n", s->name()->str(),
                       fxe::EnumNameRole(s->role()), formatByteSize(s->bytes()),
                       s->host() ? "host (remote buffer)" : "device");
  return out;
}

std::string ferry::placementSummary(const fxe::Executable &exe) {
  std::map<std::string, std::pair<int64_t, int64_t>> byRole; // device, host
  for (const fxe::State *s : *exe.states()) {
    auto &r = byRole[fxe::EnumNameRole(s->role())];
    (s->host() ? r.second : r.first) += s->bytes();
  }
  std::string out = fmt::format("{:<20}{:>13}{:>13}\n", "states by role",
                                "on device", "in host");
  for (auto &[role, r] : byRole)
    out += fmt::format("{:<20}{:>13}{:>13}\n", role, formatByteSize(r.first),
                       formatByteSize(r.second));
  return out;
}
