// `ferry report RUN.jsonl... [--html -o FILE]`: the training curves of one
// or more metrics files. The summary (text, and a table in the page) gives
// per run its steps, losses, evaluation accuracy, throughput and memory;
// the page draws one chart per metric (loss, MLM and NSP losses, accuracy,
// evaluation accuracy, learning rate, grad norm, loss scale, throughput,
// device memory, host-link bytes) with every run on it, self-contained
// (inline SVG and CSS, no script, no network) like `ferry inspect --html`.
#pragma once

#include "tools/ferry/reports/MetricsFile.h"

#include <string>
#include <vector>

namespace ferry {

// Plain text, one block per run.
std::string curvesSummary(const std::vector<MetricsRun> &runs);

// The whole page.
std::string curvesHtml(const std::vector<MetricsRun> &runs);

} // namespace ferry
