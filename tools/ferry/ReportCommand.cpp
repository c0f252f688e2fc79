// `ferry report RUN.jsonl... [--html -o FILE]`: summarizes the metrics files
// of `ferry train --metrics`, or draws their training curves, several runs
// on each chart, as a self-contained HTML page (reports/CurvesReport.h).
#include "tools/ferry/Commands.h"

#include "runtime/AtomicFile.h"
#include "tools/ferry/reports/CurvesReport.h"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry::cli {
namespace {

struct ReportOptions {
  std::vector<std::string> inputs;
  bool html = false;
  std::string output;
};

int runReport(const ReportOptions &opts) {
  if (opts.html && opts.output.empty()) {
    std::fprintf(stderr, "ferry: error: --html needs -o curves.html\n");
    return 1;
  }
  if (!opts.html && !opts.output.empty()) {
    std::fprintf(stderr, "ferry: error: -o %s writes the page of --html; add "
                         "--html, or drop -o for the text summary\n",
                 opts.output.c_str());
    return 1;
  }
  std::vector<MetricsRun> runs;
  try {
    for (const std::string &input : opts.inputs)
      runs.push_back(readMetricsFile(input));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ferry: error: %s\n", e.what());
    return 1;
  }
  if (!opts.html) {
    std::fputs(curvesSummary(runs).c_str(), stdout);
    return 0;
  }
  std::string html = curvesHtml(runs);
  if (auto error = writeFileAtomically(opts.output, html)) {
    std::fprintf(stderr, "ferry: error: %s\n", error->c_str());
    return 1;
  }
  std::printf("wrote %s (%zu bytes): training curves of %zu run%s\n",
              opts.output.c_str(), html.size(), runs.size(),
              runs.size() == 1 ? "" : "s");
  return 0;
}

} // namespace

Runner addReportCommand(CLI::App &app) {
  auto opts = std::make_shared<ReportOptions>();
  CLI::App *cmd = app.add_subcommand(
      "report", "Summarize metrics files of `ferry train --metrics`, or draw "
                "their training curves (several runs per chart) as HTML");
  cmd->add_option("metrics", opts->inputs,
                  "One or more FILE.jsonl written by ferry train --metrics")
      ->required();
  cmd->add_flag("--html", opts->html,
                "Write a self-contained HTML page of the curves (needs -o)");
  cmd->add_option("-o,--output", opts->output, "Where --html writes the page")
      ->type_name("FILE.html");
  return [opts] { return runReport(*opts); };
}

} // namespace ferry::cli
