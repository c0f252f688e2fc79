// `ferry plan CONFIG [--set KEY=VALUE ...]`: compiles without running and
// prints the plan: per phase of phased execution the bytes over the host
// link each way, matmul FLOPs and peak device bytes, with totals, and where
// the states live (device or host memory) under the device budget; with
// --model, one update's modelled time kernel by kernel on the target
// (execution.target), or on an H100 and an H200 without one. The plan is
// always printed: the machine that plans is not the one that runs.
#include "runtime/ByteSize.h"
#include "tools/ferry/Commands.h"
#include "tools/ferry/LoadExecutable.h"

#include "tools/ferry/reports/HtmlReport.h"
#include "tools/ferry/reports/KernelModel.h"
#include "tools/ferry/reports/PlanReport.h"
#include "training/config/DeviceTarget.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ferry::cli {
namespace {

struct PlanOptions {
  std::string input;
  std::vector<std::string> overrides;
  bool buffers = false;
  bool model = false;
  LinkModel links; // --nvlink-bandwidth, --network-bandwidth, --gpus-per-node
  CompileFlags compile;
};

int runPlan(const PlanOptions &opts) {
  try {
    std::optional<LoadedExecutable> loaded =
        loadExecutable(opts.input, opts.overrides, opts.compile);
    if (!loaded)
      return 1;
    const Config &config = loaded->config;
    const fxe::Executable &exe = loaded->exe->root();
    const ExecutionConfig &e = config.execution;
    std::optional<DeviceTarget> target = deviceTargetOf(e);
    std::optional<uint64_t> budget = config.deviceBudget();
    std::string budgetText =
        budget ? formatByteSize(*budget) : std::string("unlimited");
    if (target)
      budgetText +=
          " (execution.target " + e.target +
          (e.device_memory_limit ? ", execution.device_memory_limit set)"
                                 : ": " + target->name + "'s memory)");
    std::printf(
        "ferry plan %s: %s execution, recompute %s, global batch %lld = "
        "micro-batch %lld x %lld, device budget %s\n",
        opts.input.c_str(), e.mode.c_str(), e.recompute.c_str(),
        static_cast<long long>(config.training.global_batch_size),
        static_cast<long long>(e.micro_batch_size),
        static_cast<long long>(config.gradientAccumulation()),
        budgetText.c_str());
    std::printf("  device: %s planned peak (states %s + temporaries); host "
                "memory: %s of remote buffers\n",
                formatByteSize(exe.arena_bytes()).c_str(),
                formatByteSize(exe.state_bytes()).c_str(),
                formatByteSize(exe.host_bytes()).c_str());
    if (exe.prefetch() && exe.prefetch()->size() > 0)
      std::printf("  prefetch: %s\n", exe.prefetch()->c_str());
    if (e.data_parallel > 1 || e.tensor_parallel > 1) {
      // Memory above is per rank: each replica holds the whole model (and,
      // with sharding, its shard of the sharded state), each tensor rank its
      // part of the split parameters.
      int64_t sent = 0;
      for (const fxe::Program *p : *exe.programs())
        if (p->name()->str() == "train_step")
          sent = p->collective_bytes();
      std::string ranks = std::to_string(e.data_parallel) + " replica" +
                          (e.data_parallel == 1 ? "" : "s");
      if (e.tensor_parallel > 1)
        ranks += " x " + std::to_string(e.tensor_parallel) +
                 " tensor-parallel ranks";
      std::printf("  ranks: %s (memory above is per rank); each sends %s per "
                  "update in collectives\n",
                  ranks.c_str(), formatByteSize(sent).c_str());
    }
    std::string table = phasePlanTable(exe, "train_step");
    if (table.empty())
      std::printf("  no phases (execution.mode: resident): everything stays "
                  "on the device, nothing crosses the host link\n");
    std::fputs(table.c_str(), stdout);
    if (!table.empty()) {
      ReportRates rates = defaultRates(exe, target);
      double matmuls = 0;
      double step = modelledStepSeconds(exe, "train_step", rates, &matmuls);
      std::printf(
          "modelled step: %.3f s, the matmuls alone %.3f s (matmuls at %.0f "
          "GFLOP/s, host link at %.0f GB/s%s; `ferry inspect --html` draws "
          "it with --gflops/--link-gbps rates)\n",
          step, matmuls, rates.flopsPerSecond / 1e9,
          rates.linkBytesPerSecond / 1e9, rates.duplex ? " each way" : "");
    }
    std::fputs(placementSummary(exe).c_str(), stdout);
    if (opts.buffers)
      std::fputs(bufferTable(exe).c_str(), stdout);
    if (opts.model) {
      LinkModel links = opts.links;
      links.ranks = e.data_parallel * e.tensor_parallel;
      std::fputs(modelReport(exe, "train_step",
                             config.training.global_batch_size /
                                 std::max<int64_t>(1, e.data_parallel),
                             target ? std::vector<DeviceTarget>{*target}
                                    : std::vector<DeviceTarget>{h100Target(),
                                                                h200Target()},
                             links)
                     .c_str(),
                 stdout);
    }
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ferry: error: %s\n", e.what());
    return 1;
  }
}

} // namespace

Runner addPlanCommand(CLI::App &app) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App *cmd = app.add_subcommand(
      "plan", "Compile a config and print its plan without running it: per "
              "phase the bytes over the host link, FLOPs and peak device "
              "bytes, with totals, and where each buffer lives.");
  addCompileFlags(cmd, opts->compile);
  cmd->add_option("config", opts->input,
                  "Model config, e.g. configs/bert-mini.yaml (or a FILE.fxe)")
      ->required();
  cmd->add_option("--set", opts->overrides,
                  "Override a config key, e.g. --set "
                  "execution.device_memory_limit=24MiB (repeatable)")
      ->type_name("KEY=VALUE");
  cmd->add_flag("--buffers", opts->buffers,
                "Also list every state with its size and where it lives "
                "(device or host memory), largest first");
  cmd->add_flag("--model", opts->model,
                "Also model one update's time kernel by kernel on the "
                "config's execution.target, or on an H100 and an H200 without "
                "one (FLOPs and bytes over the chips' rates; a model, not a "
                "measurement), with throughput and utilisation, and the "
                "collectives' time over their links");
  auto gbps = [](double &field) {
    return [&field](double v) { field = v * 1e9; };
  };
  cmd->add_option_function<double>(
         "--nvlink-bandwidth", gbps(opts->links.nvlinkBytesPerSecond),
         "With --model: GB/s a ring collective achieves per GPU inside a node "
         "(NCCL's bus bandwidth; default 360, of NVLink 4's 450 stated each "
         "way)")
      ->type_name("GBPS")
      ->check(CLI::PositiveNumber);
  cmd->add_option_function<double>(
         "--network-bandwidth", gbps(opts->links.networkBytesPerSecond),
         "With --model: GB/s per GPU across nodes, for a data-parallel group "
         "that spans them (default 45, of a 400 Gb/s NIC per GPU)")
      ->type_name("GBPS")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--gpus-per-node", opts->links.gpusPerNode,
                  "With --model: GPUs a node; a run of more ranks sends its "
                  "data-parallel collectives over the network (default 8)")
      ->check(CLI::PositiveNumber);
  return [opts] { return runPlan(*opts); };
}

} // namespace ferry::cli
