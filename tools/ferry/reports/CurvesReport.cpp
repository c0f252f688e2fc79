// Training curves as text and as an HTML page (CurvesReport.h). Hand-written
// SVG, as HtmlReport.cpp's: the page must open offline in any browser.
#include "tools/ferry/reports/CurvesReport.h"

#include "runtime/ByteSize.h"
#include "tools/ferry/reports/Html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ferry {
namespace {

enum class Unit { Plain, Bytes };

struct ChartSpec {
  const char *key;
  const char *title;
  Unit unit = Unit::Plain;
  bool points = false; // few values (evaluations): dots joined by lines
};

const ChartSpec kCharts[] = {
    {"loss", "Training loss"},
    {"mlm_loss", "MLM loss"},
    {"nsp_loss", "NSP loss"},
    {"mlm_accuracy", "MLM accuracy (training batches)"},
    {"eval_mlm_accuracy", "MLM accuracy (evaluation)", Unit::Plain, true},
    {"eval_mlm_loss", "MLM loss (evaluation)", Unit::Plain, true},
    {"lr", "Learning rate"},
    {"grad_norm", "Gradient norm"},
    {"loss_scale", "fp16 loss scale"},
    {"samples_per_s", "Throughput (samples/s)"},
    {"device_peak_bytes", "Device memory, peak so far", Unit::Bytes},
    {"host_link_bytes", "Host-link bytes per update", Unit::Bytes},
};

const char *const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                "#9467bd", "#8c564b", "#e377c2", "#17becf"};
const char *colorOf(size_t run) {
  return kPalette[run % (sizeof kPalette / sizeof kPalette[0])];
}

// Byte axes count in the largest binary unit below the largest value, so
// their ticks fall on round numbers of it ("120 MiB", not "123.98 MiB").
struct AxisScale {
  double divisor = 1;
  const char *suffix = "";
};

AxisScale scaleFor(Unit unit, double largest) {
  if (unit != Unit::Bytes)
    return {};
  static const AxisScale kUnits[] = {{1024.0 * 1024 * 1024 * 1024, " TiB"},
                                     {1024.0 * 1024 * 1024, " GiB"},
                                     {1024.0 * 1024, " MiB"},
                                     {1024.0, " KiB"}};
  for (const AxisScale &u : kUnits)
    if (largest >= u.divisor)
      return u;
  return {1, " B"};
}

std::string formatTick(double v, const AxisScale &scale) {
  if (v == 0)
    return std::string("0") + scale.suffix;
  return fmt::format("{:.6g}{}", v, scale.suffix);
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Ticks at 1, 2 or 5 times a power of ten, about `count` of them.
std::vector<double> ticks(double lo, double hi, int count) {
  double span = hi - lo;
  if (!(span > 0))
    return {lo};
  double raw = span / count;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return out;
}

// At most `limit` points of a series, evenly spaced, always with its last.
std::vector<std::pair<int64_t, double>>
thin(const std::vector<std::pair<int64_t, double>> &series, size_t limit) {
  if (series.size() <= limit)
    return series;
  std::vector<std::pair<int64_t, double>> out;
  double stride = static_cast<double>(series.size() - 1) / (limit - 1);
  for (size_t i = 0; i < limit; ++i)
    out.push_back(series[static_cast<size_t>(std::llround(i * stride))]);
  return out;
}

std::string chart(const ChartSpec &spec, const std::vector<MetricsRun> &runs) {
  constexpr double W = 540, H = 270, L = 78, R = 16, T = 30, B = 40;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0;
  double y0 = x0, y1 = -x0;
  for (const MetricsRun &run : runs)
    if (const auto *s = run.find(spec.key))
      for (const auto &[step, value] : *s) {
        if (!std::isfinite(value))
          continue;
        x0 = std::min<double>(x0, step);
        x1 = std::max<double>(x1, step);
        y0 = std::min(y0, value);
        y1 = std::max(y1, value);
      }
  if (!(x1 >= x0) || !(y1 >= y0))
    return "";
  // Work in the axis unit from here on.
  AxisScale scale = scaleFor(spec.unit, std::max(std::abs(y0), std::abs(y1)));
  y0 /= scale.divisor;
  y1 /= scale.divisor;
  if (x1 == x0)
    x1 = x0 + 1;
  if (y1 == y0) {
    double pad = y0 == 0 ? 1 : std::abs(y0) * 0.1;
    y0 -= pad;
    y1 += pad;
  } else {
    double pad = (y1 - y0) * 0.05;
    // Quantities that cannot be negative keep a floor of 0.
    y0 = y0 >= 0 && y0 - pad < 0 ? 0 : y0 - pad;
    y1 += pad;
  }
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };

  std::string svg = fmt::format(
      "<figure><svg class=\"chart\" data-key=\"{}\" viewBox=\"0 0 {} {}\" "
      "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">\n"
      "<text x=\"{}\" y=\"18\" class=\"title\">{}</text>\n",
      spec.key, W, H, W, H, htmlEscape(spec.title), L, htmlEscape(spec.title));
  for (double t : ticks(y0, y1, 5)) {
    double y = py(t);
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" "
                       "y2=\"{:.1f}\" class=\"grid\"/><text x=\"{:.1f}\" "
                       "y=\"{:.1f}\" class=\"ytick\">{}</text>\n",
                       L, y, W - R, y, L - 6, y + 4,
                       htmlEscape(formatTick(t, scale)));
  }
  for (double t : ticks(x0, x1, 6)) {
    if (t != std::floor(t))
      continue; // steps are whole
    double x = px(t);
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" "
                       "y2=\"{:.1f}\" class=\"axis\"/><text x=\"{:.1f}\" "
                       "y=\"{:.1f}\" class=\"xtick\">{}</text>\n",
                       x, H - B, x, H - B + 4, x, H - B + 17, t);
  }
  svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" "
                     "class=\"axis\"/><text x=\"{}\" y=\"{}\" "
                     "class=\"xlabel\">step</text>\n",
                     L, H - B, W - R, H - B, (L + W - R) / 2, H - 6);
  for (size_t r = 0; r < runs.size(); ++r) {
    const auto *s = runs[r].find(spec.key);
    if (!s)
      continue;
    std::string points;
    std::string dots;
    for (const auto &[step, value] : thin(*s, 1500)) {
      if (!std::isfinite(value))
        continue;
      double y = py(value / scale.divisor);
      points += fmt::format("{:.1f},{:.1f} ", px(step), y);
      if (spec.points || s->size() == 1)
        dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" "
                            "fill=\"{}\"/>",
                            px(step), y, colorOf(r));
    }
    svg += fmt::format("<polyline class=\"run\" data-run=\"{}\" "
                       "stroke=\"{}\" points=\"{}\"/>{}\n",
                       htmlEscape(runs[r].name), colorOf(r), points, dots);
  }
  return svg + "</svg></figure>\n";
}

struct RunSummary {
  double firstLoss = NAN, lastLoss = NAN, lowestLoss = NAN;
  double lastEval = NAN, bestEval = NAN;
  double medianRate = NAN, peakBytes = NAN;
};

RunSummary summarize(const MetricsRun &run) {
  RunSummary s;
  if (const auto *loss = run.find("loss")) {
    s.firstLoss = loss->front().second;
    s.lastLoss = loss->back().second;
    s.lowestLoss = loss->front().second;
    for (const auto &point : *loss)
      s.lowestLoss = std::min(s.lowestLoss, point.second);
  }
  if (const auto *eval = run.find("eval_mlm_accuracy")) {
    s.lastEval = eval->back().second;
    s.bestEval = eval->front().second;
    for (const auto &point : *eval)
      s.bestEval = std::max(s.bestEval, point.second);
  }
  if (const auto *rate = run.find("samples_per_s")) {
    std::vector<double> values;
    for (const auto &point : *rate)
      values.push_back(point.second);
    s.medianRate = median(values);
  }
  if (const auto *peak = run.find("device_peak_bytes")) {
    s.peakBytes = 0;
    for (const auto &point : *peak)
      s.peakBytes = std::max(s.peakBytes, point.second);
  }
  return s;
}

std::string orDash(double v, const char *format) {
  return std::isnan(v) ? std::string("-") : fmt::format(fmt::runtime(format), v);
}

std::string bytesOrDash(double v) {
  return std::isnan(v) ? std::string("-")
                       : formatByteSize(static_cast<uint64_t>(v));
}

} // namespace

std::string curvesSummary(const std::vector<MetricsRun> &runs) {
  std::string out;
  for (const MetricsRun &run : runs) {
    RunSummary s = summarize(run);
    out += fmt::format(
        "{}: {} records, steps {}..{}\n"
        "  loss {} -> {} (lowest {})\n"
        "  eval mlm accuracy: last {}, best {}\n"
        "  throughput {} samples/s (median); device memory peak {}\n",
        run.path, run.records, run.firstStep, run.lastStep,
        orDash(s.firstLoss, "{:.4f}"), orDash(s.lastLoss, "{:.4f}"),
        orDash(s.lowestLoss, "{:.4f}"), orDash(s.lastEval, "{:.4f}"),
        orDash(s.bestEval, "{:.4f}"), orDash(s.medianRate, "{:.1f}"),
        bytesOrDash(s.peakBytes));
  }
  return out;
}

std::string curvesHtml(const std::vector<MetricsRun> &runs) {
  std::string title = "ferry training curves: ";
  for (size_t r = 0; r < runs.size(); ++r)
    title += (r ? ", " : "") + runs[r].name;
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>{}</title>\n<style>\n"
      "body{{font:14px system-ui,sans-serif;margin:24px;color:#222}}\n"
      "h1{{font-size:20px}} table{{border-collapse:collapse;margin:12px 0}}\n"
      "td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}\n"
      "th:first-child,td:first-child{{text-align:left}}\n"
      ".legend span{{display:inline-block;margin-right:18px}}\n"
      ".swatch{{display:inline-block;width:22px;height:4px;margin-right:6px;"
      "vertical-align:middle}}\n"
      ".charts{{display:flex;flex-wrap:wrap;gap:8px}} figure{{margin:0}}\n"
      "svg.chart{{background:#fff;border:1px solid #ddd}}\n"
      ".title{{font-weight:600;font-size:13px}}\n"
      ".grid{{stroke:#eee}} .axis{{stroke:#888}}\n"
      ".ytick{{font-size:11px;text-anchor:end;fill:#555}}\n"
      ".xtick,.xlabel{{font-size:11px;text-anchor:middle;fill:#555}}\n"
      "polyline.run{{fill:none;stroke-width:1.6}}\n"
      "</style></head><body>\n<h1>{}</h1>\n",
      htmlEscape(title), htmlEscape(title));
  html += "<p class=\"legend\">";
  for (size_t r = 0; r < runs.size(); ++r)
    html += fmt::format("<span><i class=\"swatch\" style=\"background:{}\">"
                        "</i>{}</span>",
                        colorOf(r), htmlEscape(runs[r].name));
  html += "</p>\n<table><tr><th>run</th><th>records</th><th>steps</th>"
          "<th>first loss</th><th>last loss</th><th>lowest loss</th>"
          "<th>eval MLM acc (last)</th><th>eval MLM acc (best)</th>"
          "<th>samples/s (median)</th><th>device peak</th></tr>\n";
  for (const MetricsRun &run : runs) {
    RunSummary s = summarize(run);
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}..{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        htmlEscape(run.path), run.records, run.firstStep, run.lastStep,
        orDash(s.firstLoss, "{:.4f}"), orDash(s.lastLoss, "{:.4f}"),
        orDash(s.lowestLoss, "{:.4f}"), orDash(s.lastEval, "{:.4f}"),
        orDash(s.bestEval, "{:.4f}"), orDash(s.medianRate, "{:.1f}"),
        bytesOrDash(s.peakBytes));
  }
  html += "</table>\n<div class=\"charts\">\n";
  std::string zero, absent;
  for (const ChartSpec &spec : kCharts) {
    bool any = false, nonzero = false;
    for (const MetricsRun &run : runs)
      if (const auto *series = run.find(spec.key)) {
        any = true;
        for (const auto &point : *series)
          nonzero = nonzero || point.second != 0;
      }
    std::string &list = !any ? absent : zero;
    if (any && nonzero)
      html += chart(spec, runs);
    else
      list += (list.empty() ? "" : ", ") + std::string(spec.title);
  }
  html += "</div>\n";
  if (!zero.empty())
    html += "<p>0 at every step of every run: " + htmlEscape(zero) + ".</p>\n";
  if (!absent.empty())
    html += "<p>Not in these files: " + htmlEscape(absent) +
            " (evaluation needs training.eval_every_samples; the loss scale, "
            "training.precision fp16).</p>\n";
  return html + "</body></html>\n";
}

} // namespace ferry
