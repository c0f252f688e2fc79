// Renders the phase plan of an executable as HTML + SVG (see HtmlReport.h).
// Hand-written SVG: the page must open offline in any browser, so no chart
// library or script is pulled in.
#include "tools/ferry/reports/HtmlReport.h"
#include "runtime/ByteSize.h"

#include "training/config/Config.h"
#include "tools/ferry/reports/Html.h"
#include "tools/ferry/reports/PlanReport.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

using namespace ferry;

namespace {

// One phase instance of the schedule, in order.
struct Slot {
  std::string name;
  int instance = 0, of = 1;
  double compute = 0, transfer = 0, start = 0, length = 0; // seconds
  int64_t peak = 0;
};

// The schedule of train_step: each phase in plan order, repeated as often as
// it runs (the layer phases once per layer).
std::vector<Slot> schedule(const fxe::Program &p, const ReportRates &rates,
                           bool overlap) {
  std::vector<Slot> slots;
  double t = 0;
  for (const fxe::Phase *ph : *p.phases()) {
    int64_t runs = std::max<int64_t>(ph->executions(), 1);
    // Not modelled: element-wise work (the optimizer's is memory-bound); a
    // phase without matmuls or transfers still shows as a sliver.
    for (int64_t k = 0; k < runs; ++k) {
      Slot s;
      s.name = ph->name()->str();
      s.instance = static_cast<int>(k);
      s.of = static_cast<int>(runs);
      s.compute = ph->flops() / static_cast<double>(runs) /
                  std::max(rates.flopsPerSecond, 1.0);
      double bytes =
          rates.duplex
              ? static_cast<double>(std::max(ph->bytes_in(), ph->bytes_out()))
              : static_cast<double>(ph->bytes_in() + ph->bytes_out());
      s.transfer = bytes / static_cast<double>(runs) /
                   std::max(rates.linkBytesPerSecond, 1.0);
      s.length =
          overlap ? std::max(s.compute, s.transfer) : s.compute + s.transfer;
      s.start = t;
      s.peak = ph->peak_bytes();
      t += s.length;
      slots.push_back(s);
    }
  }
  return slots;
}

std::string color(const std::string &phase) {
  if (phase.find("optimizer") != std::string::npos)
    return "#8e6bbf";
  if (phase.find("bwd") != std::string::npos)
    return "#d9822b";
  return "#3a7fc1";
}

} // namespace

namespace {
bool prefetches(const fxe::Executable &exe) {
  std::string prefetch = exe.prefetch() ? exe.prefetch()->str() : "";
  return prefetch.rfind("on", 0) == 0 || prefetch.rfind("reduced", 0) == 0;
}
} // namespace

double ferry::modelledStepSeconds(const fxe::Executable &exe,
                                  const std::string &program,
                                  const ReportRates &rates,
                                  double *matmulSeconds) {
  double total = 0, matmuls = 0;
  for (const fxe::Program *p : *exe.programs())
    if (p->name()->str() == program && p->phases())
      for (const Slot &s : schedule(*p, rates, prefetches(exe))) {
        total += s.length;
        matmuls += s.compute;
      }
  if (matmulSeconds)
    *matmulSeconds = matmuls;
  return total;
}

ReportRates ferry::defaultRates(const fxe::Executable &exe,
                                const std::optional<DeviceTarget> &target) {
  ReportRates r;
  if (target) {
    r.flopsPerSecond = 0.5 * target->tensorFlops;
    r.linkBytesPerSecond = target->hostLinkBytesPerSecond;
    r.duplex = true;
  } else if (exe.backend() && exe.backend()->str() == "cuda") {
    r.flopsPerSecond = 0.5 * 790e12;
    r.linkBytesPerSecond = 50e9;
    r.duplex = true;
  } else {
    r.flopsPerSecond = 200e9;
    r.linkBytesPerSecond = 10e9;
  }
  return r;
}

std::string ferry::htmlReport(const fxe::Executable &exe,
                              const std::string &title,
                              std::optional<uint64_t> budget,
                              const ReportRates &rates) {
  const fxe::Program *train = nullptr;
  for (const fxe::Program *p : *exe.programs())
    if (p->name()->str() == "train_step")
      train = p;
  std::string prefetch = exe.prefetch() ? exe.prefetch()->str() : "";
  bool overlap = prefetches(exe);
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<title>ferry plan: " +
          htmlEscape(title) +
          "</title>\n<style>\n"
          "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
          "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
          "table{border-collapse:collapse;font-size:13px}"
          "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
          "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}"
          ".note{color:#555;font-size:13px}svg text{font-size:11px}"
          "pre{background:#f7f7f7;padding:8px;font-size:12px}\n"
          "</style></head><body>\n";
  html += "<h1>ferry plan: " + htmlEscape(title) + "</h1>\n";
  html += fmt::format(
      "<p class=\"note\">ferry {} &middot; backend {} &middot; {} parameters "
      "&middot; device arena {} (states {}) &middot; host memory {} &middot; "
      "budget {}</p>\n",
      htmlEscape(exe.compiler_version()->str()), htmlEscape(exe.backend()->str()),
      exe.parameter_count(), formatByteSize(exe.arena_bytes()),
      formatByteSize(exe.state_bytes()), formatByteSize(exe.host_bytes()),
      budget ? formatByteSize(*budget) : "unlimited");
  if (!prefetch.empty())
    html += "<p class=\"note\">prefetch: " + htmlEscape(prefetch) + "</p>\n";
  if (!train || !train->phases() || train->phases()->size() == 0) {
    html += "<p>This executable has no phases (execution.mode: resident): "
            "everything stays on the device and nothing crosses the host "
            "link.</p>\n</body></html>\n";
    return html;
  }
  std::vector<Slot> slots = schedule(*train, rates, overlap);
  double total = slots.back().start + slots.back().length;
  const double width = 1100, left = 110, plot = width - left - 20;
  auto x = [&](double t) { return left + plot * t / std::max(total, 1e-12); };

  // Timeline: compute and host-link lanes.
  html += "<h2>One training step, phase by phase</h2>\n";
  html += fmt::format(
      "<p class=\"note\">Modelled from the compiler's plan: matmul FLOPs at "
      "{:.0f} GFLOP/s, host-link bytes at {:.1f} GB/s{}{}. A step takes "
      "{:.3f} s in this model.</p>\n",
      rates.flopsPerSecond / 1e9, rates.linkBytesPerSecond / 1e9,
      rates.duplex ? " each way (loads and stores at once)" : "",
      overlap ? "; with prefetch a phase lasts as long as the longer of its "
                "compute and its transfers"
              : "; without prefetch a phase's transfers and compute add up",
      total);
  const double laneH = 26, top = 20;
  html += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
                      "height=\"{}\" role=\"img\" aria-label=\"phase "
                      "timeline\">\n",
                      width, top + 2 * laneH + 60);
  html += fmt::format("<text x=\"4\" y=\"{}\">compute</text>\n",
                      top + laneH * 0.65);
  html += fmt::format("<text x=\"4\" y=\"{}\">host link</text>\n",
                      top + laneH * 1.65);
  for (const Slot &s : slots) {
    std::string tip = fmt::format("{} {}/{}: compute {:.2f} ms, transfers "
                                  "{:.2f} ms",
                                  s.name, s.instance + 1, s.of, s.compute * 1e3,
                                  s.transfer * 1e3);
    double x0 = x(s.start);
    html += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" "
        "fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.5\"><title>{}</title>"
        "</rect>\n",
        x0, top, std::max(0.5, x(s.start + s.compute) - x0), laneH - 4,
        color(s.name), htmlEscape(tip));
    html += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" "
        "fill=\"#4caf50\" stroke=\"#fff\" stroke-width=\"0.5\"><title>{}"
        "</title></rect>\n",
        x0, top + laneH, std::max(0.5, x(s.start + s.transfer) - x0), laneH - 4,
        htmlEscape(tip));
  }
  // Phase labels under the lanes, one per run of the same phase, on
  // alternating rows so short phases do not overwrite each other.
  int row = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].instance != 0)
      continue;
    size_t j = i;
    while (j + 1 < slots.size() && slots[j + 1].name == slots[i].name)
      ++j;
    double mid = (x(slots[i].start) + x(slots[j].start + slots[j].length)) / 2;
    double ly = top + 2 * laneH + 12 + 14 * (row++ % 3);
    const char *anchor = mid > left + plot - 70 ? "end"
                         : mid < left + 70      ? "start"
                                                : "middle";
    html +=
        fmt::format("<text x=\"{:.1f}\" y=\"{}\" "
                    "text-anchor=\"{}\">{}{}</text>\n",
                    mid, ly, anchor, htmlEscape(slots[i].name),
                    slots[i].of > 1 ? fmt::format(" x{}", slots[i].of) : "");
  }
  html += "</svg>\n";
  html += "<p class=\"note\"><span style=\"color:#3a7fc1\">&#9632;</span> "
          "forward <span style=\"color:#d9822b\">&#9632;</span> backward "
          "<span style=\"color:#8e6bbf\">&#9632;</span> optimizer "
          "<span style=\"color:#4caf50\">&#9632;</span> host-link "
          "transfers</p>\n";

  // Device memory over the schedule, with the budget.
  int64_t top64 = 0;
  for (const Slot &s : slots)
    top64 = std::max(top64, s.peak);
  double ceiling = static_cast<double>(
      std::max<int64_t>(top64, budget ? static_cast<int64_t>(*budget) : 0));
  ceiling *= 1.1;
  const double h = 220, mtop = 10;
  auto y = [&](double bytes) { return mtop + h - h * bytes / ceiling; };
  html += "<h2>Device memory over the schedule</h2>\n";
  html += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
                      "height=\"{}\" role=\"img\" aria-label=\"device "
                      "memory\">\n",
                      width, h + 50);
  html += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" "
                      "stroke=\"#999\"/>\n",
                      left, mtop + h, left + plot, mtop + h);
  std::string path;
  for (const Slot &s : slots)
    path +=
        fmt::format("{}{:.1f},{:.1f} L{:.1f},{:.1f} ", path.empty() ? "M" : "L",
                    x(s.start), y(static_cast<double>(s.peak)),
                    x(s.start + s.length), y(static_cast<double>(s.peak)));
  html += "<path d=\"" + path +
          "\" fill=\"none\" stroke=\"#3a7fc1\" stroke-width=\"2\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    double v = ceiling * k / 4;
    html += fmt::format("<text x=\"4\" y=\"{:.1f}\">{}</text>\n", y(v) + 4,
                        formatByteSize(static_cast<uint64_t>(v)));
  }
  if (budget) {
    double yb = y(static_cast<double>(*budget));
    html += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" "
                        "stroke=\"#c62828\" stroke-dasharray=\"6 4\"/>\n",
                        left, yb, left + plot, yb);
    html += fmt::format("<text x=\"{}\" y=\"{:.1f}\" fill=\"#c62828\" "
                        "text-anchor=\"end\">budget {}</text>\n",
                        left + plot, yb - 4, formatByteSize(*budget));
  }
  html += "</svg>\n<p class=\"note\">Peak device bytes of each phase "
          "(states kept on the device + staging buffers + temporaries).</p>\n";

  // The tables, as `ferry plan` prints them.
  html += "<h2>Per phase</h2>\n<table><tr><th>phase</th><th>runs</th>"
          "<th>host &rarr; device</th><th>device &rarr; host</th>"
          "<th>matmul GFLOP</th><th>peak device</th></tr>\n";
  for (const fxe::Phase *ph : *train->phases())
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                        "<td>{:.3f}</td><td>{}</td></tr>\n",
                        htmlEscape(ph->name()->str()), ph->executions(),
                        formatByteSize(ph->bytes_in()),
                        formatByteSize(ph->bytes_out()), ph->flops() / 1e9,
                        formatByteSize(ph->peak_bytes()));
  html += "</table>\n<h2>Where the states live</h2>\n<pre>" +
          htmlEscape(placementSummary(exe)) + "</pre>\n</body></html>\n";
  return html;
}
