// `ferry inspect FILE.fxe`: what an executable holds: its build, backend,
// arena plan, parameter count, states by role and each program's kernels.
#include "runtime/ByteSize.h"
#include "tools/ferry/Commands.h"

#include "runtime/AtomicFile.h"
#include "training/config/Config.h"
#include "runtime/executable/ExecutableFile.h"
#include "runtime/executable/KernelTable.h"
#include "tools/ferry/reports/HtmlReport.h"
#include "tools/ferry/reports/PlanReport.h"

#include <cstdio>
#include <map>
#include <memory>
#include <string>

namespace ferry::cli {
namespace {

struct InspectOptions {
  std::string path;
  bool html = false;
  std::string output;
  double gflops = 0, linkGBps = 0;
};

int writeHtml(const InspectOptions &opts, const ExecutableFile &file) {
  const fxe::Executable &exe = file.root();
  if (opts.output.empty()) {
    std::fprintf(stderr, "ferry: error: --html needs -o report.html\n");
    return 1;
  }
  Config config = parseConfig(exe.config_yaml()->str(),
                              opts.path + " (embedded config)", {});
  ReportRates rates = defaultRates(exe, deviceTargetOf(config.execution));
  if (opts.gflops > 0)
    rates.flopsPerSecond = opts.gflops * 1e9;
  if (opts.linkGBps > 0)
    rates.linkBytesPerSecond = opts.linkGBps * 1e9;
  std::string html =
      htmlReport(exe, opts.path, config.deviceBudget(), rates);
  if (auto error = writeFileAtomically(opts.output, html)) {
    std::fprintf(stderr, "ferry: error: %s\n", error->c_str());
    return 1;
  }
  std::printf("wrote %s (%zu bytes): phase timeline, device memory over the "
              "schedule, plan tables\n",
              opts.output.c_str(), html.size());
  return 0;
}

int runInspect(const InspectOptions &opts) {
  const std::string &path = opts.path;
  try {
    ExecutableFile file = ExecutableFile::load(path);
    if (opts.html)
      return writeHtml(opts, file);
    const fxe::Executable &exe = file.root();
    std::printf("%s: ferry executable, format %u, %zu bytes, checksum "
                "%016llx\n",
                path.c_str(), kExecutableFormatVersion, file.payloadBytes(),
                static_cast<unsigned long long>(file.checksum()));
    std::printf("  compiled by   ferry %s\n", exe.compiler_version()->c_str());
    std::printf("  backend       %s\n", exe.backend()->c_str());
    std::printf("  parameters    %lld\n",
                static_cast<long long>(exe.parameter_count()));
    std::printf("  arena         %s (%lld bytes): states %s + temporaries\n",
                formatByteSize(exe.arena_bytes()).c_str(),
                static_cast<long long>(exe.arena_bytes()),
                formatByteSize(exe.state_bytes()).c_str());
    if (exe.host_bytes() > 0)
      std::printf("  host memory   %s of remote buffers (phased execution)\n",
                  formatByteSize(exe.host_bytes()).c_str());
    if (exe.prefetch() && exe.prefetch()->size() > 0)
      std::printf("  prefetch      %s\n", exe.prefetch()->c_str());
    std::map<std::string, std::pair<int, int64_t>> roles;
    for (const fxe::State *s : *exe.states()) {
      auto &r = roles[fxe::EnumNameRole(s->role())];
      ++r.first;
      r.second += s->bytes();
    }
    for (auto &[role, r] : roles)
      std::printf("    %-15s %4d tensors  %s\n", role.c_str(), r.first,
                  formatByteSize(r.second).c_str());
    for (const fxe::Program *p : *exe.programs()) {
      std::map<std::string, int> kernels;
      int loops = 0;
      for (const fxe::Instr *in : *p->instrs()) {
        if (in->loop_count() > 0)
          ++loops;
        else
          ++kernels[kernels::kernelName(in->kernel())];
      }
      std::printf("  program %s: %u instructions (%d loops), temporaries %s\n",
                  p->name()->c_str(), p->instrs()->size(), loops,
                  formatByteSize(p->transient_bytes()).c_str());
      std::string line = "   ";
      for (auto &[k, n] : kernels) {
        std::string item = " " + k + " x" + std::to_string(n);
        if (line.size() + item.size() > 78) {
          std::printf("%s\n", line.c_str());
          line = "   ";
        }
        line += item;
      }
      std::printf("%s\n", line.c_str());
    }
    for (const fxe::Program *p : *exe.programs())
      std::fputs(phasePlanTable(exe, p->name()->str()).c_str(), stdout);
    if (exe.host_bytes() > 0)
      std::fputs(placementSummary(exe).c_str(), stdout);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ferry: error: %s\n", e.what());
    return 1;
  }
}

} // namespace

Runner addInspectCommand(CLI::App &app) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App *cmd = app.add_subcommand(
      "inspect", "Summarise a compiled executable: build, arena plan, "
                 "parameters, states, each program's kernels and phase plan; "
                 "--html -o FILE writes a report with the phase timeline and "
                 "device memory over the schedule.");
  cmd->add_option("executable", opts->path, "A compiled executable (FILE.fxe)")
      ->required();
  cmd->add_flag("--html", opts->html,
                "Write a self-contained HTML report (SVG, no network) to -o");
  cmd->add_option("-o,--output", opts->output, "The report's path")
      ->type_name("FILE");
  cmd->add_option("--gflops", opts->gflops,
                  "Matmul rate the timeline assumes, GFLOP/s (default: 200 "
                  "for cpu, 395000 for cuda)");
  cmd->add_option("--link-gbps", opts->linkGBps,
                  "Host-link rate the timeline assumes, GB/s (default: 10 "
                  "for cpu, 50 for cuda)");
  return [opts] { return runInspect(*opts); };
}

} // namespace ferry::cli
