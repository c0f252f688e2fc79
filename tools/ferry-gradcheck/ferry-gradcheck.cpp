// ferry-gradcheck: checks the gradients ferry computes against central finite
// differences, through the whole stack (autodiff pass, lowering, executable,
// CPU kernels).
//
//   ferry-gradcheck FILE.mlir            graph IR with parameters and an
//                                        @forward() whose result 0 is a loss
//   ferry-gradcheck --config CFG [--set K=V]...   the BERT model of a config
//                                        (inputs: seeded synthetic batches)
//
// For every parameter it samples up to --samples elements, perturbs each by
// +-eps, reruns @forward and compares (L(w+eps) - L(w-eps)) / 2eps with the
// gradient @forward_grad accumulated. In fp32 the finite difference carries
// rounding error ~ ulp(L)/eps, so the check is per tensor:
//   ||fd - grad|| <= rtol * ||grad|| + atol * sqrt(samples)
// over the sampled elements, with rtol and atol stated on the command line
// (defaults 1e-2 and 1e-3, eps 1e-2 for parameters initialised ~N(0, 1); the
// lit tests state theirs).
#include "compiler/ExecutableWriter.h"
#include "compiler/GraphCompile.h"
#include "compiler/Registration.h"
#include "models/bert/BertBuilder.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "training/config/Config.h"
#include "runtime/cpu/CpuBackend.h"
#include "training/data/PackedRows.h"
#include "training/data/SyntheticData.h"
#include "runtime/executable/ExecutableFile.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/SourceMgr.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

using namespace ferry;

namespace {

struct Options {
  std::string file, config;
  std::vector<std::string> overrides;
  double eps = 1e-2, rtol = 1e-2, atol = 1e-3;
  int samples = 8;
  uint64_t seed = 7;
  double weightScale = 1.0;
};

// Copies synthetic inputs into a program's input states (BERT models).
void feedInputs(CpuBackend &backend, const Config *config,
                const std::string &program) {
  if (!config)
    return;
  int64_t rows = config->execution.micro_batch_size;
  data::SyntheticData data(config->model.seq_length,
                           config->model.max_predictions,
                           config->model.vocab_size, 11, rows);
  data::HostBatch batch;
  data.fill(0, rows, batch);
  if (config->model.packed()) // one sample a row, in the packed layout
    data::widenToPacks(batch, config->model.max_sequences_per_pack, 0);
  auto put = [&](const std::string &name, const void *src, size_t bytes) {
    const fxe::State *s = backend.state("arg." + program + "." + name);
    if (!s)
      return;
    if (static_cast<size_t>(s->bytes()) != bytes)
      throw RuntimeError("input " + name + " has the wrong size");
    std::memcpy(backend.f32(s), src, bytes);
  };
  put("input_ids", batch.inputIds.data(), batch.inputIds.size() * 4);
  put("segment_ids", batch.segmentIds.data(), batch.segmentIds.size() * 4);
  put("input_mask", batch.inputMask.data(), batch.inputMask.size() * 4);
  put("masked_lm_positions", batch.maskedPositions.data(),
      batch.maskedPositions.size() * 4);
  put("masked_lm_ids", batch.maskedIds.data(), batch.maskedIds.size() * 4);
  put("masked_lm_weights", batch.maskedWeights.data(),
      batch.maskedWeights.size() * 4);
  put("next_sentence_labels", batch.nspLabels.data(),
      batch.nspLabels.size() * 4);
  put("next_sentence_weights", batch.nspWeights.data(),
      batch.nspWeights.size() * 4);
  float count = static_cast<float>(batch.countedSlots());
  put("mlm_count", &count, 4);
  put("sequence_ids", batch.sequenceIds.data(), batch.sequenceIds.size() * 4);
  put("position_ids", batch.positionIds.data(), batch.positionIds.size() * 4);
  put("dropout_keys", batch.dropoutKeys.data(), batch.dropoutKeys.size() * 4);
  put("cls_positions", batch.clsPositions.data(),
      batch.clsPositions.size() * 4);
  float sequences = static_cast<float>(batch.realSequences());
  put("nsp_count", &sequences, 4);
  // model.task squad: a start and an end position per row, inside the row's
  // tokens, drawn from the same synthetic stream.
  std::vector<int32_t> spans(static_cast<size_t>(2 * rows));
  std::vector<float> spanWeights(spans.size(), 1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t length = 0;
    for (int64_t t = 0; t < batch.seq; ++t)
      length += batch.inputMask[static_cast<size_t>(r * batch.seq + t)];
    int32_t start = static_cast<int32_t>(1 + (7 * r + 3) % (length - 1));
    spans[2 * r] = start;
    spans[2 * r + 1] = static_cast<int32_t>(
        std::min<int64_t>(length - 1, start + (r % 3)));
  }
  float spanCount = static_cast<float>(spans.size());
  put("span_positions", spans.data(), spans.size() * 4);
  put("span_weights", spanWeights.data(), spanWeights.size() * 4);
  put("span_count", &spanCount, 4);
}

std::vector<int64_t> registerInputs(const fxe::Executable &exe,
                                    const std::string &program, uint64_t seed) {
  for (const fxe::Program *p : *exe.programs())
    if (p->name()->str() == program) {
      std::vector<int64_t> values;
      for (const auto *name : *p->inputs())
        values.push_back(name->str() == "seed" ? static_cast<int64_t>(seed)
                                               : 0);
      return values;
    }
  return {};
}

int run(const Options &opts) {
  mlir::DialectRegistry registry;
  registerFerryDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::optional<Config> config;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (!opts.config.empty()) {
    config = loadConfig(opts.config, opts.overrides);
    module = compileGraph(context, *config, "gradcheck");
  } else {
    llvm::SourceMgr sources;
    module = mlir::parseSourceFile<mlir::ModuleOp>(opts.file, &context);
  }
  if (!module)
    return 1;
  mlir::PassManager pm(&context);
  pm.addPass(createAutodiffPass()); // entry: forward
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createCanonicalizerPass());
  PipelineOptions lower;
  lower.programs = {"forward", "forward_grad"};
  buildLowerToRtPipeline(pm, lower);
  if (mlir::failed(pm.run(*module)))
    return 1;
  Config dummy;
  if (!config) {
    dummy =
        parseConfig("model: {layers: 1, hidden_size: 8, num_heads: 1, "
                    "ffn_size: 8, seq_length: 8, max_predictions: 1}\n"
                    "training: {global_batch_size: 1, steps: 1, "
                    "optimizer: {lr: 0.1}, lr_schedule: {total_steps: 1}}\n",
                    "gradcheck");
  }
  std::vector<uint8_t> payload =
      serializeExecutable(*module, config ? *config : dummy);
  if (payload.empty())
    return 1;
  ExecutableFile exe =
      ExecutableFile::fromPayload(std::move(payload), opts.file + opts.config);
  CpuBackend backend(exe.root(), std::nullopt);
  backend.initialiseStates(opts.seed);
  // BERT's N(0, 0.02) weights make many gradients (e.g. attention's) too
  // small for fp32 finite differences to resolve; scaling the normally
  // initialised parameters makes every path carry signal.
  if (opts.weightScale != 1.0)
    for (const fxe::State *s : *exe.root().states())
      if (s->role() == fxe::Role_Parameter && s->init() == fxe::Init_Normal)
        for (int64_t i = 0; i < s->bytes() / 4; ++i)
          backend.f32(s)[i] *= static_cast<float>(opts.weightScale);
  feedInputs(backend, config ? &*config : nullptr, "forward");
  feedInputs(backend, config ? &*config : nullptr, "forward_grad");
  std::vector<int64_t> fwdIn = registerInputs(exe.root(), "forward", 5);
  std::vector<int64_t> gradIn = registerInputs(exe.root(), "forward_grad", 5);

  auto loss = [&] {
    backend.run("forward", fwdIn);
    return static_cast<double>(
        backend.f32(backend.state("output.forward.0"))[0]);
  };
  backend.run("forward_grad", gradIn);
  double base = loss();
  std::printf("loss %.6g; eps %g, rtol %g, atol %g, %d samples per tensor\n",
              base, opts.eps, opts.rtol, opts.atol, opts.samples);

  std::mt19937_64 rng(opts.seed);
  int failures = 0, checked = 0;
  for (const fxe::State *s : *exe.root().states()) {
    if (s->role() != fxe::Role_Parameter)
      continue;
    const fxe::State *g = backend.state("grad." + s->name()->str());
    if (!g) {
      std::printf("FAIL %-40s no gradient\n", s->name()->c_str());
      ++failures;
      ++checked;
      continue;
    }
    float *w = backend.f32(s);
    const float *grad = backend.f32(g);
    int64_t n = s->bytes() / 4;
    std::vector<int64_t> picks;
    if (n <= opts.samples) {
      for (int64_t i = 0; i < n; ++i)
        picks.push_back(i);
    } else {
      std::uniform_int_distribution<int64_t> pick(0, n - 1);
      for (int k = 0; k < opts.samples; ++k)
        picks.push_back(pick(rng));
    }
    double diff2 = 0, grad2 = 0, worst = 0;
    for (int64_t i : picks) {
      float saved = w[i];
      w[i] = saved + static_cast<float>(opts.eps);
      double plus = loss();
      w[i] = saved - static_cast<float>(opts.eps);
      double minus = loss();
      w[i] = saved;
      // The actual step taken in fp32, not the nominal eps.
      double step = static_cast<double>(saved + static_cast<float>(opts.eps)) -
                    static_cast<double>(saved - static_cast<float>(opts.eps));
      double fd = (plus - minus) / step;
      diff2 += (fd - grad[i]) * (fd - grad[i]);
      grad2 += static_cast<double>(grad[i]) * grad[i];
      worst = std::max(worst, std::fabs(fd - grad[i]));
    }
    double bound = opts.rtol * std::sqrt(grad2) +
                   opts.atol * std::sqrt(static_cast<double>(picks.size()));
    bool ok = std::sqrt(diff2) <= bound && std::isfinite(diff2);
    std::printf("%s %-40s |fd-grad| %.3e  |grad| %.3e  bound %.3e  worst "
                "%.3e\n",
                ok ? "ok  " : "FAIL", s->name()->c_str(), std::sqrt(diff2),
                std::sqrt(grad2), bound, worst);
    failures += ok ? 0 : 1;
    ++checked;
  }
  std::printf("%d of %d parameters %s\n", checked - failures, checked,
              failures ? "passed: FAILED" : "passed");
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"ferry-gradcheck: gradients against central finite "
               "differences"};
  Options opts;
  app.add_option("file", opts.file, "graph IR with @forward (result 0 = loss)");
  app.add_option("--config", opts.config, "check the BERT model of a config");
  app.add_option("--set", opts.overrides, "override a config key")
      ->allow_extra_args(false);
  app.add_option("--eps", opts.eps, "perturbation")->capture_default_str();
  app.add_option("--rtol", opts.rtol, "relative tolerance per tensor")
      ->capture_default_str();
  app.add_option("--atol", opts.atol, "absolute tolerance per element")
      ->capture_default_str();
  app.add_option("--samples", opts.samples, "elements checked per parameter")
      ->capture_default_str();
  app.add_option("--seed", opts.seed, "initialisation seed")
      ->capture_default_str();
  app.add_option("--weight-scale", opts.weightScale,
                 "multiply normally initialised parameters by this")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (opts.file.empty() == opts.config.empty()) {
    std::fprintf(stderr, "ferry-gradcheck: give FILE.mlir or --config\n");
    return 2;
  }
  try {
    return run(opts);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ferry-gradcheck: error: %s\n", e.what());
    return 1;
  }
}
