// GPU tests (ctest label `gpu`) of whole training runs through the `ferry`
// CLI, and their simulated twins (label `cuda-sim`: the same source built
// against the CUDA simulator, running `ferry-cudasim`, never skipped):
// - the CUDA backend against the CPU backend in fp32 (20 updates): every
//   loss within relative 1e-3, and every parameter and Adam moment, tensor by
//   tensor, within relative L2 1e-3 (cuBLAS orders its sums its own way; the
//   device's exp/erf differ from the CPU's by a few ULPs, which 20 updates
//   amplify);
// - bf16 matmuls, bf16 activations and fused attention on the CUDA backend
//   within 2% of the CPU's fp32 without fusion, and near the CPU's
//   emulation of the same bf16 program (losses 1e-3, weights 1e-2,
//   moments 2e-2);
// - SQuAD fine-tuning (the span head) on the CUDA backend = the CPU's (5
//   epochs, relative 1e-3), and the same predicted answers;
// - packed rows = the unpacked rows of the same samples, dropout on (2
//   updates, relative 1e-5), fused and unfused;
// - fused attention = the unfused ops on the CUDA backend in fp32 (6
//   updates, relative 1e-4 for the losses and every tensor: the fused
//   kernels sum in other orders and recompute the probabilities);
// - phased = resident on the CUDA backend (8 updates, relative 1e-5 for the
//   losses and every tensor), under a budget (800 KiB) that puts 256 KiB of
//   parameters and moments in host memory, so the copy streams work;
// - `--profile` on the CUDA backend (phased, so the copy streams work):
//   time per kernel class, each stream's busy time and the copies' overlap
//   with compute, and host-side launches per program run (2 with CUDA-graph
//   replay: the per-run values' copy and the graph launch);
// - CUDA-graph replay = direct launches, bit for bit, resident and phased;
// - determinism: two runs give the same checkpoint bytes (under the
//   simulator with different block, thread and stream orders), and a run
//   stopped after 2 updates and resumed to 4 saves the same bytes as one
//   that never stopped;
// - under the simulator only (its NCCL over MPI; the GPU machines have no
//   mpirun): 2 replicas under mpirun = one process (4 updates, relative
//   1e-5), data parallel resident, and with replicated tensor sharding
//   phased under a budget; tensor parallelism at T = 2, with sequence
//   parallelism, and T = 2 x D = 2 sharded and phased, likewise.
// Each compares the tensors of the checkpoints both runs save. On a machine
// without a GPU the `gpu` build skips with the CUDA runtime's reason.
#include "GpuTestPaths.h"
#include "runtime/cuda/DeviceQuery.h"
#include "training/checkpoint/Safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#ifndef FERRY_CLI
#define FERRY_CLI "ferry" // the simulated build runs "ferry-cudasim"
#endif

using namespace ferry::test;

namespace {

// A narrow, short BERT: the simulator runs every thread of every block on
// the CPU, so the shapes stay small; the code paths are bert-tiny's.
const char *kShape = "--set model.vocab_size=200 --set model.hidden_size=32 "
                     "--set model.ffn_size=64 --set model.seq_length=32 "
                     "--set model.max_predictions=5 "
                     "--set training.global_batch_size=4 "
                     "--set execution.micro_batch_size=2 ";

std::vector<double> losses(const std::string &path) {
  std::vector<double> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find("\"loss\": ");
    if (at != std::string::npos)
      out.push_back(std::stod(line.substr(at + 8)));
  }
  return out;
}

struct TrainingRun {
  std::vector<double> losses;
  std::string checkpoint; // the last step's directory
  std::string output;     // what the command printed (stdout)
};

// Trains with `binary` (ferry for the CPU backend, FERRY_CLI for CUDA),
// started by `launcher` when given (mpirun ... for replicas).
TrainingRun train(const std::string &binary, const std::string &name,
                  const std::string &sets, int steps,
                  const std::string &launcher = "", bool fresh = true) {
  // Per process: ctest runs seeds and variants of one test side by side.
  std::string dir = workDir(FERRY_CLI, name);
  std::string metrics = dir + ".jsonl";
  std::string command = (fresh ? "rm -rf " + dir + " && " : std::string()) +
                        launcher + binaryDir() + "/" + binary + " train " +
                        sourceDir() + "/configs/bert-tiny.yaml --log-every 0 " +
                        cacheFlag() + kShape + sets + " --steps " +
                        std::to_string(steps) + " --save " + dir +
                        " --metrics " + metrics + " > " + dir + ".out";
  if (fresh)
    std::remove(metrics.c_str());
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  char step[32];
  std::snprintf(step, sizeof step, "/step-%08d", steps);
  std::ifstream printed(dir + ".out");
  std::string output((std::istreambuf_iterator<char>(printed)), {});
  return {losses(metrics), dir + step, output};
}

void expectClose(const std::vector<double> &a, const std::vector<double> &b,
                 double rtol) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_FALSE(std::isnan(a[i])) << "step " << i + 1;
    EXPECT_LE(std::abs(a[i] - b[i]), rtol * std::abs(b[i]))
        << "step " << i + 1 << ": " << a[i] << " vs " << b[i];
  }
}

// Every tensor of `file` (model or optimizer state) in both checkpoints:
// the same names, and ||got - want|| <= rtol ||want|| for each. The one
// parameter whose gradient is analytically zero (the attention key bias:
// softmax ignores a constant added to every score) holds only rounding
// noise in both runs, with its moments: it must stay below `noise` in
// magnitude instead (1e-6 in fp32; 16-bit rounding breaks the invariance
// slightly: 1e-4 in bf16). `alsoZero` names more such tensors (the span
// head's).
void expectSameTensors(const TrainingRun &got, const TrainingRun &want,
                       const char *file, double rtol, double noise = 1e-6,
                       const std::vector<std::string> &alsoZero = {}) {
  using namespace ferry::ckpt;
  SafetensorsFile a = readSafetensors(got.checkpoint + "/" + file);
  SafetensorsFile b = readSafetensors(want.checkpoint + "/" + file);
  ASSERT_EQ(a.tensors.size(), b.tensors.size()) << file;
  for (const Tensor &t : b.tensors) {
    const Tensor *other = a.find(t.name);
    ASSERT_NE(other, nullptr) << t.name;
    std::vector<float> x = other->toFloat32(), y = t.toFloat32();
    ASSERT_EQ(x.size(), y.size()) << t.name;
    double diff = 0, norm = 0, largest = 0;
    ASSERT_FALSE(x.empty()) << t.name;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_FALSE(std::isnan(x[i])) << t.name << " NaN at " << i;
      diff += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
      norm += double(y[i]) * y[i];
      largest =
          std::max({largest, std::abs(double(x[i])), std::abs(double(y[i]))});
    }
    bool analyticZero =
        t.name.find("attention.self.key.bias") != std::string::npos;
    for (const std::string &zero : alsoZero)
      analyticZero = analyticZero || t.name == zero;
    if (analyticZero) {
      EXPECT_LT(largest, noise) << file << ": " << t.name;
      continue; // rounding noise around an analytic zero, in both runs
    }
    EXPECT_LE(std::sqrt(diff), rtol * std::sqrt(norm))
        << file << ": " << t.name << " (" << x.size() << " values)";
  }
}

// Every test trains on the CUDA backend: skipped, with the CUDA runtime's
// reason, only when no device is present (never under the simulator).
class CudaTraining : public ::testing::Test {
protected:
  void SetUp() override {
    ferry::CudaDeviceReport report = ferry::queryCudaDevices();
#ifdef FERRY_CUDA_SIM
    ASSERT_FALSE(report.devices.empty()) << report.reason;
#else
    if (report.devices.empty() && !compileOnly())
      GTEST_SKIP() << "no CUDA device: " << report.reason;
#endif
  }
};

} // namespace

TEST_F(CudaTraining, Fp32MatchesTheCpuBackend) {
  TrainingRun cpu = train("ferry", "cpu", "", 20);
  TrainingRun gpu =
      train(FERRY_CLI, "cuda",
            "--set execution.backend=cuda --set training.precision=fp32", 20);
  expectClose(gpu.losses, cpu.losses, 1e-3);
  expectSameTensors(gpu, cpu, "model.safetensors", 1e-3);
  expectSameTensors(gpu, cpu, "optimizer.safetensors", 1e-3);
}

TEST_F(CudaTraining, Bf16LossesWithinTwoPercentOfCpuFp32) {
  TrainingRun cpu =
      train("ferry", "cpu-fp32", "--set execution.fusion=false", 20);
  TrainingRun gpu =
      train(FERRY_CLI, "cuda-bf16",
            "--set execution.backend=cuda --set training.precision=bf16", 20);
  expectClose(gpu.losses, cpu.losses, 0.02);
  expectSameTensors(gpu, cpu, "model.safetensors", 0.02, 1e-4);
}

// bf16 activations (training.bf16_activations, the default with bf16): the
// CUDA kernels read and write the bf16 buffers the compiler planned as the
// CPU backend's emulation does (fp32 compute on their values, results
// rounded to nearest even). After 6 updates: losses within relative 1e-3,
// every weight within 1e-2, every optimizer moment within 2e-2. The two
// backends' fp32 sums differ in order, a difference a bf16 rounding boundary
// sometimes turns into a whole ULP, and Adam scales the small gradients of the
// biases up to the learning rate: bf16 matmuls alone leave the biases 3.1e-3
// apart after 6 updates, bf16 activations 6.0e-3 (the rest of the tensors far
// less). The unfused path (execution.fusion: false) stores the attention
// scores, probabilities and their transposes as bf16 too (softmax,
// softmax_grad, transpose), within the same bounds.
TEST_F(CudaTraining, Bf16ActivationsEqualTheCpuEmulation) {
  for (std::string fusion : {"true", "false"}) {
    std::string sets =
        "--set training.precision=bf16 --set execution.fusion=" + fusion;
    TrainingRun cpu = train("ferry", "cpu-bf16-" + fusion, sets, 6);
    TrainingRun gpu = train(FERRY_CLI, "cuda-bf16-storage-" + fusion,
                            sets + " --set execution.backend=cuda", 6);
    SCOPED_TRACE("execution.fusion=" + fusion);
    expectClose(gpu.losses, cpu.losses, 1e-3);
    expectSameTensors(gpu, cpu, "model.safetensors", 1e-2, 1e-4);
    // The moments of the same biases, whose gradients are the smallest (the
    // query bias's first moment: a norm of 6e-7), 2e-2.
    expectSameTensors(gpu, cpu, "optimizer.safetensors", 2e-2, 1e-4);
  }
}

TEST_F(CudaTraining, FusedAttentionEqualsTheUnfusedOps) {
  std::string sets = "--set execution.backend=cuda "
                     "--set training.precision=fp32";
  TrainingRun fused = train(FERRY_CLI, "fused", sets, 6);
  TrainingRun unfused =
      train(FERRY_CLI, "unfused", sets + " --set execution.fusion=false", 6);
  expectClose(fused.losses, unfused.losses, 1e-4);
  expectSameTensors(fused, unfused, "model.safetensors", 1e-4);
  expectSameTensors(fused, unfused, "optimizer.safetensors", 1e-4);
}

TEST_F(CudaTraining, PhasedEqualsResident) {
  std::string common = "--set execution.backend=cuda "
                       "--set training.precision=fp32 "
                       "--set execution.micro_batch_size=2";
  TrainingRun resident = train(FERRY_CLI, "resident", common, 8);
  TrainingRun phased = train(FERRY_CLI, "phased",
                             common + " --set execution.mode=phased --set "
                                      "execution.recompute=layer --set "
                                      "execution.device_memory_limit=800KiB",
                             8);
  expectClose(phased.losses, resident.losses, 1e-5);
  expectSameTensors(phased, resident, "model.safetensors", 1e-5);
  expectSameTensors(phased, resident, "optimizer.safetensors", 1e-5);
}

// The samples ferry-datagen --from-text makes of `text` with `flags`, and
// the rows it writes them in (its --verbose line "(N samples in R rows)").
std::pair<int, int> makeShards(const std::string &text,
                               const std::string &vocab, const std::string &out,
                               const std::string &flags) {
  std::string log = out + ".log";
  std::string command = binaryDir() + "/ferry-datagen --from-text " + text +
                        " --vocab " + vocab + " -o " + out + " --verbose " +
                        flags + " > /dev/null 2> " + log;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(log);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  int samples = 0, rows = 0;
  size_t at = all.find(" (");
  EXPECT_NE(at, std::string::npos) << all;
  if (at != std::string::npos)
    std::sscanf(all.c_str() + at, " (%d samples in %d rows)", &samples, &rows);
  return {samples, rows};
}

// Packed rows compute what the unpacked rows of the same samples compute
// (fp32, one global batch holding every sample of a short English text, in
// file order): the fused attention kernel and the unfused softmax with
// sequence ids, the NSP head on each sequence's [CLS], and dropout on,
// keyed by each sequence's unpacked sample (the second update is the second
// epoch). Losses and every tensor within relative 1e-5 after 2 updates.
TEST_F(CudaTraining, PackedRowsEqualTheUnpackedRows) {
  std::string dir = workDir(FERRY_CLI, "packing");
  std::string setup =
      "rm -rf " + dir + " && mkdir -p " + dir + "/text && head -n 50 " +
      "/usr/share/common-licenses/Apache-2.0 > " + dir + "/text/apache && " +
      "python3 " + sourceDir() + "/test/e2e/Inputs/bert_tokenizer.py vocab " +
      dir + "/vocab.txt " + dir + "/text/apache";
  ASSERT_EQ(std::system(setup.c_str()), 0) << setup;
  std::ifstream vocabFile(dir + "/vocab.txt");
  int vocab = 0;
  for (std::string line; std::getline(vocabFile, line);)
    ++vocab;
  // 20 samples in 14 rows (the licence's paragraphs are short documents).
  std::string shape = "--seq 64 --predictions 10 --seed 3 --dupe-factor 1";
  auto [samples, unpackedRows] =
      makeShards(dir + "/text", dir + "/vocab.txt", dir + "/unpacked", shape);
  auto [packedSamples, rows] =
      makeShards(dir + "/text", dir + "/vocab.txt", dir + "/packed",
                 shape + " --pack --max-sequences-per-pack 3");
  ASSERT_EQ(unpackedRows, samples);
  ASSERT_EQ(packedSamples, samples);
  ASSERT_LT(rows, samples) << "nothing was packed";
  std::string common =
      "--set execution.backend=cuda --set training.precision=fp32 "
      "--set data.shuffle=false --set model.seq_length=64 --set "
      "model.max_predictions=10 "
      "--set model.vocab_size=" +
      std::to_string(vocab) + " ";
  auto batch = [](int n) {
    return "--set training.global_batch_size=" + std::to_string(n) +
           " --set execution.micro_batch_size=" + std::to_string(n) + " ";
  };
  TrainingRun unpacked = train(
      FERRY_CLI, "unpacked",
      common + batch(samples) + "--set data.path=" + dir + "/unpacked", 2);
  for (std::string fusion : {"true", "false"}) {
    SCOPED_TRACE("execution.fusion=" + fusion);
    TrainingRun packed =
        train(FERRY_CLI, "packed-" + fusion,
              common + batch(rows) + "--set data.path=" + dir +
                  "/packed --set model.max_sequences_per_pack=3 "
                  "--set execution.fusion=" +
                  fusion,
              2);
    expectClose(packed.losses, unpacked.losses, 1e-5);
    expectSameTensors(packed, unpacked, "model.safetensors", 1e-5);
    expectSameTensors(packed, unpacked, "optimizer.safetensors", 1e-5);
  }
}

// SQuAD fine-tuning (model.task squad: the span head's transpose, cross-
// entropy over positions and argmax) on the CUDA backend equals the CPU
// backend's in fp32: 5 epochs on a small SQuAD-format file, every loss
// within relative 1e-3 and every tensor of the fine-tuned model within 1e-3
// (as Fp32MatchesTheCpuBackend), fused attention and not.
TEST_F(CudaTraining, SquadFineTuningMatchesTheCpuBackend) {
  std::string dir = workDir(FERRY_CLI, "squad");
  std::string squad =
      sourceDir() + "/test/e2e/Inputs/squad/tiny-train-v1.1.json";
  std::string setup = "rm -rf " + dir + " && mkdir -p " + dir + " && python3 " +
                      sourceDir() + "/test/e2e/Inputs/squad_text.py " + squad +
                      " > " + dir + "/text.txt && python3 " + sourceDir() +
                      "/test/e2e/Inputs/bert_tokenizer.py vocab " + dir +
                      "/vocab.txt " + dir + "/text.txt";
  ASSERT_EQ(std::system(setup.c_str()), 0) << setup;
  auto fineTune = [&](const std::string &binary, const std::string &name,
                      const std::string &sets) {
    std::string out = dir + "/" + name;
    std::string command =
        binaryDir() + "/" + binary + " squad train " + sourceDir() +
        "/configs/bert-tiny.yaml " + cacheFlag() + "--vocab " + dir +
        "/vocab.txt --data " + squad +
        " --set model.vocab_size=400 --set model.hidden_size=32 "
        "--set model.ffn_size=64 --set model.seq_length=64 "
        "--set training.global_batch_size=4 "
        "--set execution.micro_batch_size=2 "
        "--set training.precision=fp32 --doc-stride 16 "
        "--max-query-length 16 --epochs 5 --log-every 0 --metrics " +
        out + ".jsonl --save " + out + " " + sets + " > " + out + ".out";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    std::ifstream latest(out + "/latest");
    std::string step;
    std::getline(latest, step);
    return TrainingRun{losses(out + ".jsonl"), out + "/" + step, ""};
  };
  for (std::string fusion : {"true", "false"}) {
    SCOPED_TRACE("execution.fusion=" + fusion);
    TrainingRun cpu =
        fineTune("ferry", "cpu-" + fusion, "--set execution.fusion=" + fusion);
    TrainingRun gpu = fineTune(FERRY_CLI, "cuda-" + fusion,
                               "--set execution.backend=cuda "
                               "--set execution.fusion=" +
                                   fusion);
    ASSERT_GE(cpu.losses.size(), 5u);
    expectClose(gpu.losses, cpu.losses, 1e-3);
    // The span head's softmax over positions ignores what is added at every
    // position: qa_outputs.bias and the last layer's output LayerNorm bias
    // have analytically zero gradients, and AdamW moves them by rounding
    // noise only (under 1e-4 here).
    expectSameTensors(
        gpu, cpu, "model.safetensors", 1e-3, 1e-4,
        {"qa_outputs.bias", "bert.encoder.layer.1.output.LayerNorm.bias"});
    // Prediction (eval_step's span logits read back) from the CPU's model:
    // the same answers on both backends.
    auto predict = [&](const std::string &binary, const std::string &name,
                       const std::string &sets) {
      std::string out = dir + "/predict-" + name;
      std::string command =
          binaryDir() + "/" + binary + " squad predict " + sourceDir() +
          "/configs/bert-tiny.yaml " + cacheFlag() + "--vocab " + dir +
          "/vocab.txt --data " + squad + " --checkpoint " + cpu.checkpoint +
          " --set model.vocab_size=400 --set model.hidden_size=32 "
          "--set model.ffn_size=64 --set model.seq_length=64 "
          "--set execution.micro_batch_size=2 --set training.precision=fp32 "
          "--doc-stride 16 --max-query-length 16 -o " +
          out + " " + sets + " > " + out + ".out";
      EXPECT_EQ(std::system(command.c_str()), 0) << command;
      std::ifstream in(out + "/predictions.json");
      return std::string((std::istreambuf_iterator<char>(in)), {});
    };
    std::string onCpu = predict("ferry", "cpu-" + fusion, "");
    std::string onGpu =
        predict(FERRY_CLI, "cuda-" + fusion, "--set execution.backend=cuda");
    EXPECT_NE(onCpu.find("\"q7\""), std::string::npos) << onCpu;
    EXPECT_EQ(onGpu, onCpu);
  }
}

// The bytes of `file` in both checkpoints are the same.
void expectSameBytes(const TrainingRun &a, const TrainingRun &b,
                     const char *file) {
  auto read = [](const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in.good()) << path;
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::string x = read(a.checkpoint + "/" + file),
              y = read(b.checkpoint + "/" + file);
  EXPECT_FALSE(x.empty()) << file;
  EXPECT_TRUE(x == y) << file << " differs between " << a.checkpoint << " and "
                      << b.checkpoint;
}

// Dropout on (bert-tiny's config), both gathers, the losses and LAMB's
// sums: every sum in a fixed order. The simulator's seed changes the order
// its blocks, threads and streams run in; a GPU's scheduling varies alone.
TEST_F(CudaTraining, TwoRunsGiveTheSameBits) {
  std::string sets = "--set execution.backend=cuda "
                     "--set training.precision=fp32 "
                     "--set training.optimizer.name=lamb";
  TrainingRun a = train(FERRY_CLI, "bits-a", sets, 3, "FERRY_CUDA_SIM_SEED=3 ");
  TrainingRun b = train(FERRY_CLI, "bits-b", sets, 3, "FERRY_CUDA_SIM_SEED=8 ");
  ASSERT_EQ(a.losses.size(), 3u);
  EXPECT_EQ(a.losses, b.losses);
  expectSameBytes(a, b, "model.safetensors");
  expectSameBytes(a, b, "optimizer.safetensors");
}

TEST_F(CudaTraining, ResumeIsBitExact) {
  std::string sets = "--set execution.backend=cuda "
                     "--set training.precision=fp32";
  TrainingRun whole = train(FERRY_CLI, "whole", sets, 4);
  train(FERRY_CLI, "split", sets, 2);
  std::string dir = workDir(FERRY_CLI, "split");
  TrainingRun resumed =
      train(FERRY_CLI, "split", sets + " --resume " + dir, 4, "", false);
  ASSERT_EQ(resumed.losses.size(), 4u) << "2 steps, then 2 resumed";
  EXPECT_EQ(resumed.losses, whole.losses);
  expectSameBytes(resumed, whole, "model.safetensors");
  expectSameBytes(resumed, whole, "optimizer.safetensors");
}

// Graph replay (execution.cuda_graphs, the default) against direct
// launches: the same checkpoint bytes after 3 updates, resident and phased
// (dropout on, LAMB; phased under a budget, so the copy streams fork from
// and join the captured compute stream). Each update's values (the step,
// the learning rate, Adam's corrections, the dropout's sample offsets)
// reach the captured graph through device memory.
TEST_F(CudaTraining, GraphReplayEqualsDirectLaunches) {
  std::string sets = "--set execution.backend=cuda "
                     "--set training.precision=fp32 "
                     "--set training.optimizer.name=lamb";
  std::string phased = " --set execution.mode=phased --set "
                       "execution.recompute=layer --set "
                       "execution.device_memory_limit=800KiB";
  for (const std::string &mode : {std::string(), phased}) {
    std::string tag = mode.empty() ? "resident" : "phased";
    TrainingRun graph = train(FERRY_CLI, "graph-" + tag, sets + mode, 3);
    TrainingRun direct =
        train(FERRY_CLI, "direct-" + tag,
              sets + mode + " --set execution.cuda_graphs=false", 3);
    ASSERT_EQ(graph.losses.size(), 3u) << tag;
    EXPECT_EQ(graph.losses, direct.losses) << tag;
    expectSameBytes(graph, direct, "model.safetensors");
    expectSameBytes(graph, direct, "optimizer.safetensors");
  }
}

// bf16 weight copies (training.bf16_weight_copies, the default with bf16):
// each GEMM reads a bf16 copy of its weight that a `scale` by 1 wrote
// (rounded to nearest even by the bf16 store) instead of rounding the fp32
// weight into its workspace; the same rounding, resident and phased
// (kShape's two micro-batches: a copy serves several GEMM calls). Under the
// simulator, whose cuBLASLt has one algorithm, that is the same bits after
// 3 updates. On a GPU the two executables are different programs: their
// operands sit at other offsets and their workspaces differ, and cuBLASLt's
// heuristic picks its algorithm (tile, split-K) by alignment and workspace,
// which orders the fp32 sums differently. There the bound is
// Bf16ActivationsEqualTheCpuEmulation's, for the same reason (a different
// summation order, turned into whole bf16 ULPs at rounding boundaries):
// losses within 1e-3, weights 1e-2, moments 2e-2.
TEST_F(CudaTraining, Bf16WeightCopiesGiveTheSameBits) {
  std::string sets = "--set execution.backend=cuda "
                     "--set training.precision=bf16";
  std::string phased = " --set execution.mode=phased --set "
                       "execution.recompute=layer --set "
                       "execution.device_memory_limit=800KiB";
  for (const std::string &mode : {std::string(), phased}) {
    std::string tag = mode.empty() ? "resident" : "phased";
    TrainingRun copies = train(FERRY_CLI, "copies-" + tag, sets + mode, 3);
    TrainingRun rounded =
        train(FERRY_CLI, "rounded-" + tag,
              sets + mode + " --set training.bf16_weight_copies=false", 3);
    ASSERT_EQ(copies.losses.size(), 3u) << tag;
#ifdef FERRY_CUDA_SIM
    EXPECT_EQ(copies.losses, rounded.losses) << tag;
    expectSameBytes(copies, rounded, "model.safetensors");
    expectSameBytes(copies, rounded, "optimizer.safetensors");
#else
    SCOPED_TRACE(tag);
    expectClose(copies.losses, rounded.losses, 1e-3);
    expectSameTensors(copies, rounded, "model.safetensors", 1e-2, 1e-4);
    expectSameTensors(copies, rounded, "optimizer.safetensors", 2e-2, 1e-4);
#endif
  }
}

// `ferry train --profile` on the CUDA backend, phased so that the copy
// streams work: its report, as the file `text` holds it.
std::string profile(const std::string &name, const std::string &sets) {
  std::string dir = workDir(FERRY_CLI, name);
  std::string command =
      binaryDir() + "/" + FERRY_CLI + " train " + sourceDir() +
      "/configs/bert-tiny.yaml --log-every 0 " + cacheFlag() + kShape +
      "--set execution.backend=cuda --set training.precision=fp32 "
      "--set execution.mode=phased --set execution.recompute=layer "
      "--set execution.device_memory_limit=800KiB --steps 2 --profile " +
      sets + " > " + dir + ".txt 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(dir + ".txt");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The host-side launches per run that the report gives for train_step's
// runs `how` ("directly" or "replayed"); -1 if it has no such line.
double trainStepLaunches(const std::string &text, const std::string &how) {
  for (size_t line = text.find("  train_step "); line != std::string::npos;
       line = text.find("  train_step ", line + 1)) {
    size_t eol = text.find('\n', line);
    std::string l = text.substr(line, eol - line);
    if (l.find(" " + how + ",") == std::string::npos)
      continue;
    size_t end = l.find(" launches");
    size_t start = l.rfind(',', end);
    return std::stod(l.substr(start + 1, end - start - 1));
  }
  return -1;
}

TEST_F(CudaTraining, ProfileReportsKernelsStreamsAndLaunches) {
  std::string text = profile("profile", "--set execution.cuda_graphs=false");
  for (const char *expected :
       {"CUDA backend profile (CUDA-event timestamps", "\nattention_grad ",
        "\nattention ", "\ngemm_epilogue ", "\nload ", "\nstore ",
        "streams: compute busy ", "overlapped compute",
        "host-side launches per program run", "  train_step ", " launches, "})
    EXPECT_NE(text.find(expected), std::string::npos)
        << "missing \"" << expected << "\" in:\n"
        << text;
  // Direct launches: one per kernel, copy and set of the program.
  EXPECT_GT(trainStepLaunches(text, "directly"), 200) << text;
  EXPECT_EQ(trainStepLaunches(text, "replayed"), -1) << text;

  // Replayed as a graph: the per-run values' copy and the graph's launch.
  std::string graph = profile("profile-graph", "");
  for (const char *expected :
       {"programs replayed as CUDA graphs are timed whole",
        "(a CUDA graph of "})
    EXPECT_NE(graph.find(expected), std::string::npos)
        << "missing \"" << expected << "\" in:\n"
        << graph;
  // The first run launches directly; the second is captured, and from
  // then on each run is the per-run values' copy and the graph's launch.
  EXPECT_GT(trainStepLaunches(graph, "directly"), 200) << graph;
  EXPECT_EQ(trainStepLaunches(graph, "replayed"), 2) << graph;
}

#ifdef FERRY_CUDA_SIM
// Replicas under mpirun: simulator only. The GPU machines ferry is tried on
// have one GPU and no mpirun; there NcclGroup.OneRankCollectivesOnDevice
// Buffers tests the NCCL group with one rank.

// `ranks` processes of `FERRY_CLI` under mpirun against one process, with
// `sets` on both and `rankSets` on the ranks: losses, weights and moments
// within relative 1e-5 after 4 updates.
void expectRanksEqualOneProcess(const std::string &name,
                                const std::string &sets,
                                const std::string &rankSets, int ranks) {
  ASSERT_EQ(std::system("command -v mpirun > /dev/null 2>&1"), 0)
      << "no mpirun: install openmpi-bin (scripts/install-deps.sh)";
  TrainingRun one = train(FERRY_CLI, name + "-one", sets, 4);
  TrainingRun many = train(FERRY_CLI, name + "-ranks", sets + " " + rankSets, 4,
                           "mpirun --allow-run-as-root --oversubscribe -np " +
                               std::to_string(ranks) + " ");
  expectClose(many.losses, one.losses, 1e-5);
  expectSameTensors(many, one, "model.safetensors", 1e-5);
  expectSameTensors(many, one, "optimizer.safetensors", 1e-5);
}

// Two replicas (execution.data_parallel 2), with `replicaSets` on them.
void expectReplicasEqualOneProcess(const std::string &name,
                                   const std::string &sets,
                                   const std::string &replicaSets) {
  expectRanksEqualOneProcess(
      name, sets, "--set execution.data_parallel=2 " + replicaSets, 2);
}

const char *kFp32Cuda = "--set execution.backend=cuda "
                        "--set training.precision=fp32 "
                        "--set execution.micro_batch_size=2";

TEST_F(CudaTraining, DataParallelEqualsOneProcess) {
  expectReplicasEqualOneProcess("dp", kFp32Cuda, "");
}

// Replicas replay their programs as CUDA graphs too, NCCL's collectives
// captured with the kernels: the same bits as direct launches (2 replicas,
// sharded and phased, so the graph holds reduce-scatters, all-gathers and
// the copy streams' forks).
TEST_F(CudaTraining, ReplicasReplayEqualsDirectLaunches) {
  ASSERT_EQ(std::system("command -v mpirun > /dev/null 2>&1"), 0)
      << "no mpirun: install openmpi-bin (scripts/install-deps.sh)";
  std::string sets =
      std::string(kFp32Cuda) +
      " --set execution.data_parallel=2 --set "
      "execution.replicated_tensor_sharding=true --set "
      "execution.rts_min_elements=64 --set execution.mode=phased --set "
      "execution.recompute=layer --set execution.device_memory_limit=2MiB";
  const char *mpirun = "mpirun --allow-run-as-root --oversubscribe -np 2 ";
  TrainingRun graph = train(FERRY_CLI, "replicas-graph", sets, 3, mpirun);
  TrainingRun direct =
      train(FERRY_CLI, "replicas-direct",
            sets + " --set execution.cuda_graphs=false", 3, mpirun);
  ASSERT_EQ(graph.losses.size(), 3u);
  EXPECT_EQ(graph.losses, direct.losses);
  expectSameBytes(graph, direct, "model.safetensors");
  expectSameBytes(graph, direct, "optimizer.safetensors");
  // A replayed graph's collectives count at every launch, not once at its
  // capture: the bytes each replica sent are the direct run's.
  auto sent = [](const std::string &out) {
    size_t at = out.find("collectives: ");
    return at == std::string::npos ? std::string("(none)")
                                   : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_NE(sent(direct.output), "(none)") << direct.output;
  EXPECT_EQ(sent(graph.output), sent(direct.output));
}

TEST_F(CudaTraining, ShardedPhasedEqualsOneProcess) {
  expectReplicasEqualOneProcess(
      "rts", kFp32Cuda,
      "--set execution.replicated_tensor_sharding=true --set "
      "execution.rts_min_elements=64 --set execution.mode=phased --set "
      "execution.recompute=layer --set execution.device_memory_limit=2MiB");
}

// Tensor parallelism on the CUDA backend (NCCL communicators per group:
// the simulator's over MPI), dropout on and the attention fused: T = 2
// (the heads, the FFN and the vocabulary split; the dropout keys offset by
// the tensor rank; the MLM loss from the class-split kernels and a max
// all-reduce), with sequence parallelism (reduce-scatters, all-gathers and
// parts of the group), and T = 2 x D = 2 with replicated tensor sharding,
// phased under a budget.
TEST_F(CudaTraining, TensorParallelEqualsOneProcess) {
  expectRanksEqualOneProcess("tp", kFp32Cuda,
                             "--set execution.tensor_parallel=2", 2);
}

TEST_F(CudaTraining, SequenceParallelEqualsOneProcess) {
  expectRanksEqualOneProcess("sp", kFp32Cuda,
                             "--set execution.tensor_parallel=2 --set "
                             "execution.sequence_parallel=true",
                             2);
}

TEST_F(CudaTraining, TensorParallelShardedPhasedEqualsOneProcess) {
  expectRanksEqualOneProcess(
      "tp-rts", kFp32Cuda,
      "--set execution.tensor_parallel=2 --set execution.data_parallel=2 "
      "--set execution.replicated_tensor_sharding=true --set "
      "execution.rts_min_elements=64 --set execution.mode=phased --set "
      "execution.recompute=layer --set execution.device_memory_limit=2MiB",
      4);
}
#endif
