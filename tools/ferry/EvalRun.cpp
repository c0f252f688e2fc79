// The body of `ferry eval` (EvalCommand.cpp parses its flags): one process,
// or the replicas mpirun started, each evaluating its rows of each batch.
// Built into libferry-run.so (RunApi.h).
#include "tools/ferry/LoadExecutable.h"
#include "tools/ferry/RunApi.h"

#include "runtime/AtomicFile.h"
#include "tools/ferry/ReplicaRun.h"
#include "training/checkpoint/Safetensors.h"
#include "training/train/Trainer.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ferry::cli {

int runEval(const EvalOptionsCli &opts) {
  std::vector<std::string> overrides = opts.overrides;
  // The evaluation set is not training data: keep the config's data.path
  // out of it (a synthetic default would be fine, a missing file would not).
  overrides.push_back("data.path=synthetic");
  // Outside the try, as in `ferry train`: a failing rank ends the job
  // before the backend is destroyed.
  ReplicaRun replicas;
  std::optional<LoadedExecutable> loaded;
  std::unique_ptr<Trainer> trainer;
  try {
    replicas.join();
    comm::Communicator *group = replicas.group.get();
    std::FILE *out = replicas.out;
    // Run alone, a config evaluates in this one process whatever replicas
    // or tensor-parallel ranks it trains with (its checkpoints hold whole
    // tensors).
    bool config = opts.input.size() < 4 ||
                  opts.input.compare(opts.input.size() - 4, 4, ".fxe") != 0;
    if (group->size() == 1 && config) {
      overrides.push_back("execution.data_parallel=1");
      overrides.push_back("execution.replicated_tensor_sharding=false");
      overrides.push_back("execution.tensor_parallel=1");
    }
    loaded = loadExecutable(
        opts.input, overrides, opts.compile,
        [&](const Config &c) {
          checkReplicaCount(c, *group);
          group->setTimeoutSeconds(c.execution.collective_timeout_seconds);
        },
        group);
    if (!loaded) {
      replicas.failPrinted("the executable could not be built (see its "
                           "messages)");
      return 1;
    }
    if (stopAfterCompile(opts.compile, opts.input, *loaded, out))
      return 0;
    replicas.checkSameRun(*loaded->exe, loaded->config, 0);
    trainer = std::make_unique<Trainer>(*loaded->exe, loaded->config, group);
    trainer->initFromCheckpoint(opts.checkpoint, out);
    std::fflush(out);
    std::vector<EvalOutput> outputs;
    EvalMetrics m = trainer->evaluate(
        opts.data, opts.samples, opts.outputs.empty() ? nullptr : &outputs);
    // Packed rows: the samples they hold too.
    std::string packed =
        loaded->config.model.packed()
            ? fmt::format(" rows holding {:.0f} samples", m.sequences)
            : std::string(" samples");
    std::fprintf(out,
                 "eval %s: %lld%s, %.0f masked tokens\n"
                 "  mlm_accuracy %.6f\n  mlm_loss     %.6f\n"
                 "  nsp_accuracy %.6f\n  nsp_loss     %.6f\n"
                 "  %.1f samples/s\n",
                 opts.data.c_str(), static_cast<long long>(m.samples),
                 packed.c_str(), m.countedSlots, m.mlmAccuracy, m.mlmLoss,
                 m.nspAccuracy, m.nspLoss,
                 m.seconds > 0 ? m.sequences / m.seconds : 0.0);
    std::fflush(out);
    if (group->rank() != 0)
      return 0; // rank 0 writes the results
    if (!opts.outputs.empty()) {
      std::vector<ckpt::Tensor> tensors;
      for (const EvalOutput &o : outputs)
        tensors.push_back(ckpt::makeTensor(o.name, o.shape, o.values.data(),
                                           ckpt::DType::F32));
      ckpt::writeSafetensors(opts.outputs, tensors,
                             {{"format", "pt"}, {"data", opts.data}});
      std::fprintf(out, "wrote %zu output(s) of %lld samples to %s\n",
                   tensors.size(), static_cast<long long>(m.samples),
                   opts.outputs.c_str());
    }
    if (!opts.json.empty()) {
      std::string json = fmt::format(
          "{{\"samples\": {}, \"masked_tokens\": {}, \"eval_mlm_accuracy\": "
          "{:.9g}, \"eval_mlm_loss\": {:.9g}, \"eval_nsp_accuracy\": {:.9g}, "
          "\"eval_nsp_loss\": {:.9g}}}\n",
          m.samples, static_cast<int64_t>(m.countedSlots), m.mlmAccuracy,
          m.mlmLoss, m.nspAccuracy, m.nspLoss);
      if (std::optional<std::string> error =
              writeFileAtomically(opts.json, json)) {
        std::fprintf(stderr, "ferry: error: %s\n", error->c_str());
        return 1;
      }
    }
    return 0;
  } catch (const std::exception &e) {
    replicas.fail(e);
  }
  return 1;
}

} // namespace ferry::cli
