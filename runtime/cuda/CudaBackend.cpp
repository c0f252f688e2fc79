// The CUDA backend (see CudaBackend.h). The instruction stream is the one
// the CPU backend replays (same checks on load, same registers and loops);
// each kernel instruction becomes a launch on the compute stream, each
// load/store an async copy on the loads' or the stores' stream with an
// event, each wait a stream-wait on that event, so copies overlap compute as
// the compiler scheduled them, and loads overlap stores.
#include "runtime/cuda/CudaBackend.h"
#include "runtime/ByteSize.h"

#include "runtime/config/Config.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/DeviceQuery.h"
#include "runtime/cuda/KernelProfile.h"
#include "runtime/cuda/Launch.h"
#include "runtime/cuda/LtGemm.h"
#include "runtime/cuda/NcclGroup.h"
#include "runtime/executable/KernelTable.h"
#include "runtime/executable/Validate.h"
#include "runtime/kernels/LearningRate.h"
#include "runtime/random/Philox.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

using namespace ferry;

namespace {

using kernels::Kernel;

void checkCuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw RuntimeError(
        fmt::format("CUDA {} failed: {}", what, cudaGetErrorString(e)));
}

bool hasCollectives(const fxe::Executable &exe) {
  for (const fxe::Program *p : *exe.programs())
    for (const fxe::Instr *in : *p->instrs()) {
      auto k = static_cast<Kernel>(in->kernel());
      if (k == Kernel::AllReduce || k == Kernel::ReduceScatter ||
          k == Kernel::AllGather)
        return true;
    }
  return false;
}

class CudaBackend : public Backend {
public:
  CudaBackend(const fxe::Executable &exe, std::optional<uint64_t> limitBytes,
              comm::Communicator *group)
      : Backend(exe, group) {
    validateExecutable(exe, limitBytes);
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
      throw RuntimeError(fmt::format(
          "the executable was compiled for execution.backend cuda, but no "
          "CUDA device is usable here: {}; run it on a machine with an "
          "NVIDIA GPU, or recompile for execution.backend cpu",
          e != cudaSuccess ? cudaGetErrorString(e) : "no device found"));
    if (group_->size() > 1)
      cuda::selectDevice(*group_);
    arenaBytes_ = static_cast<uint64_t>(exe.arena_bytes());
    hostBytes_ = static_cast<uint64_t>(exe.host_bytes());
    checkCuda(
        cudaMalloc(&arena_, std::max<uint64_t>(arenaBytes_, 64)),
        fmt::format("allocation of the {} arena", formatByteSize(arenaBytes_))
            .c_str());
    checkCuda(cudaMemset(arena_, 0, std::max<uint64_t>(arenaBytes_, 64)),
              "arena clear");
    // The clear runs on the legacy stream, which the non-blocking streams
    // below do not wait for: finish it before any of them starts.
    checkCuda(cudaDeviceSynchronize(), "arena clear");
    if (hostBytes_ > 0) {
      checkCuda(cudaHostAlloc(&host_, hostBytes_, cudaHostAllocDefault),
                "pinned host allocation for the remote buffers");
      std::memset(host_, 0, hostBytes_);
    }
    // Non-blocking: work on the legacy default stream (a library's, or a
    // synchronous copy) never serialises the three.
    for (cudaStream_t *stream : {&compute_, &loads_, &stores_})
      checkCuda(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking),
                "stream creation");
    checkCuda(cudaMalloc(&scratch_, cuda::kScratchDoubles * sizeof(double)),
              "scratch");
    if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS)
      throw RuntimeError("cuBLAS could not be initialised on this device");
    lt_ = std::make_unique<cuda::LtGemm>();
    if (hasCollectives(exe))
      nccl_ = std::make_unique<cuda::NcclGroup>(*group_);
    // Keep the stream-ordered pool's memory between steps (the few kernels
    // that take scratch from it would otherwise map it again every step).
    cudaMemPool_t pool;
    int device = 0;
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      uint64_t keep = UINT64_MAX;
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
  }

  ~CudaBackend() override {
    cudaDeviceSynchronize();
    for (auto &[id, event] : events_)
      cudaEventDestroy(event);
    if (cublas_)
      cublasDestroy(cublas_);
    cudaFree(scratch_);
    cudaStreamDestroy(compute_);
    for (const Transfer &t : inFlight_)
      cudaEventDestroy(t.done);
    for (cudaEvent_t e : eventPool_)
      cudaEventDestroy(e);
    cudaStreamDestroy(loads_);
    cudaStreamDestroy(stores_);
    cudaFree(arena_);
    cudaFreeHost(host_);
  }

  void initialiseStates(uint64_t seed) override {
    for (const fxe::State *s : *exe_.states()) {
      std::vector<char> values(static_cast<size_t>(s->bytes()));
      initialStateValues(s, seed, values.data(), group_->rank());
      write(s, 0, values.data(), s->bytes());
    }
  }

  void read(const fxe::State *s, int64_t offset, void *dst,
            int64_t bytes) override {
    checkRange(s, offset, bytes);
    checkCuda(cudaDeviceSynchronize(), "synchronisation");
    if (s->host())
      std::memcpy(dst, host_ + s->offset() + offset, bytes);
    else
      checkCuda(cudaMemcpy(dst, arena_ + s->offset() + offset, bytes,
                           cudaMemcpyDeviceToHost),
                "copy of a state to the host");
  }

  void write(const fxe::State *s, int64_t offset, const void *src,
             int64_t bytes) override {
    checkRange(s, offset, bytes);
    checkCuda(cudaDeviceSynchronize(), "synchronisation");
    if (s->host())
      std::memcpy(host_ + s->offset() + offset, src, bytes);
    else
      checkCuda(cudaMemcpy(arena_ + s->offset() + offset, src, bytes,
                           cudaMemcpyHostToDevice),
                "copy of a state to the device");
    // From pageable memory cudaMemcpy may return before the bytes reach the
    // device, and the non-blocking compute stream does not wait for it.
    checkCuda(cudaDeviceSynchronize(), "copy of a state to the device");
  }

  void run(const std::string &name,
           const std::vector<int64_t> &inputs) override {
    std::vector<int64_t> registers;
    const fxe::Program &p = program(name, inputs, registers);
    current_ = &p;
    if (profiling_)
      profile_.programStart(name, compute_);
    replay(*p.instrs(), 0, p.instrs()->size(), registers);
    // With collectives, every stream may wait behind an NCCL call (copies
    // wait on the compute stream): poll them all with the collective
    // timeout, never block.
    if (nccl_)
      for (cudaStream_t stream : {compute_, loads_, stores_})
        nccl_->synchronize(stream, "program " + name);
    checkCuda(cudaStreamSynchronize(loads_), "copy stream (loads)");
    checkCuda(cudaStreamSynchronize(stores_), "copy stream (stores)");
    checkCuda(cudaStreamSynchronize(compute_), "compute stream");
    if (profiling_)
      profile_.programEnd();
    // The index checks the CPU backend makes before its kernels, made by
    // the kernels here: report what they skipped.
    if (unsigned bad = cuda::takeIndexErrors()) {
      std::string kinds;
      for (auto [bit, what] :
           {std::pair<unsigned, const char *>{1, "embedding ids"},
            {2, "masked-LM positions"},
            {4, "labels"}})
        if (bad & bit)
          kinds += (kinds.empty() ? "" : ", ") + std::string(what);
      throw RuntimeError(fmt::format(
          "program {}: {} outside the model's range reached the GPU (the "
          "kernels skipped them); the input data does not match the model "
          "(vocabulary, sequence length or classes)",
          name, kinds));
    }
  }

  uint64_t arenaBytes() const override { return arenaBytes_; }
  uint64_t peakBytes() const override { return peakBytes_; }
  uint64_t hostBytes() const override { return hostBytes_; }
  uint64_t hostLinkBytes() const override { return hostLinkBytes_; }
  void setProfiling(bool on) override { profiling_ = on; }
  std::string profileReport() const override { return profile_.report(); }
  std::string name() const override { return "cuda"; }

private:
  void checkRange(const fxe::State *s, int64_t offset, int64_t bytes) const {
    if (offset < 0 || bytes < 0 || offset + bytes > s->bytes())
      throw RuntimeError("access outside state " + s->name()->str());
  }

  cudaEvent_t otherMark(int64_t id) { return event(-2 - id); }

  cudaEvent_t event(int64_t id) {
    auto it = events_.find(id);
    if (it != events_.end())
      return it->second;
    cudaEvent_t e;
    checkCuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
              "event creation");
    events_[id] = e;
    return e;
  }

  void replay(const flatbuffers::Vector<flatbuffers::Offset<fxe::Instr>> &v,
              size_t begin, size_t end, std::vector<int64_t> &registers) {
    replayInstrs(v, begin, end, registers,
                 [&](const fxe::Instr &in, const std::vector<int64_t> &regs) {
                   execute(in, regs);
                 });
  }

  // Transfers keep the order the executable issued them in wherever it
  // matters (the CPU backend's single FIFO queue gives it for free): a load
  // waits for every earlier store still in flight that touches the host
  // bytes it reads or the device bytes it writes (a double buffer's half
  // still being stored), a store for every earlier load that touches its
  // bytes. Finished transfers are dropped first, so the list stays short.
  struct Transfer {
    char *hostBegin, *hostEnd, *deviceBegin, *deviceEnd;
    bool store;
    cudaEvent_t done;
  };
  void orderAfterOverlapping(char *h, char *d, int64_t bytes, bool store,
                             cudaStream_t stream) {
    size_t kept = 0;
    for (Transfer &t : inFlight_) {
      cudaError_t state = cudaEventQuery(t.done);
      if (state == cudaSuccess) {
        eventPool_.push_back(t.done);
        continue;
      }
      if (state != cudaErrorNotReady)
        checkCuda(state, "event query");
      // "Not ready" is an answer, not a failure, but the runtime records it
      // as the thread's last error: cleared here, as PyTorch does, so that
      // nothing later reads it as its own.
      (void)cudaGetLastError();
      inFlight_[kept++] = t;
    }
    inFlight_.resize(kept);
    for (const Transfer &t : inFlight_)
      if (t.store != store && ((t.hostBegin < h + bytes && h < t.hostEnd) ||
                               (t.deviceBegin < d + bytes && d < t.deviceEnd)))
        checkCuda(cudaStreamWaitEvent(stream, t.done, 0), "stream wait");
  }
  cudaEvent_t pooledEvent() {
    if (!eventPool_.empty()) {
      cudaEvent_t e = eventPool_.back();
      eventPool_.pop_back();
      return e;
    }
    cudaEvent_t e;
    checkCuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
              "event creation");
    return e;
  }

  char *address(const fxe::Ref *r, const std::vector<int64_t> &registers,
                bool hostSide) {
    int64_t offset = evaluateAffine(r->offset(), registers);
    uint64_t limit = hostSide ? hostBytes_ : arenaBytes_;
    if (offset < 0 || r->bytes() < 0 ||
        static_cast<uint64_t>(offset + r->bytes()) > limit)
      throw RuntimeError(fmt::format(
          "an instruction addresses bytes [{}, {}) outside the {}-byte {}",
          offset, offset + r->bytes(), limit,
          hostSide ? "host memory" : "arena"));
    if (!hostSide)
      peakBytes_ = std::max<uint64_t>(peakBytes_, offset + r->bytes());
    return (hostSide ? host_ : arena_) + offset;
  }

  void execute(const fxe::Instr &in, const std::vector<int64_t> &registers) {
    auto I = [&](size_t k) {
      return evaluateAffine(in.ints()->Get(k), registers);
    };
    auto kernel = static_cast<Kernel>(in.kernel());
    switch (kernel) {
    case Kernel::Load:
    case Kernel::Store: {
      if (in.ints()->size() >= 4 && I(2) >= I(3))
        return; // a prefetch past the last iteration
      bool load = kernel == Kernel::Load;
      char *h = address(in.buffers()->Get(load ? 0 : 1), registers, true);
      char *d = address(in.buffers()->Get(load ? 1 : 0), registers, false);
      int64_t bytes = I(0);
      // Loads and stores have a stream each, so the two directions of the
      // host link (one copy engine each) overlap. The copy may not start
      // before the compute that produced (store) or last read (load) its
      // device bytes: its stream waits for the compute stream up to here.
      cudaStream_t stream = load ? loads_ : stores_;
      cudaEvent_t ready = event(-1);
      checkCuda(cudaEventRecord(ready, compute_), "event record");
      checkCuda(cudaStreamWaitEvent(stream, ready, 0), "stream wait");
      orderAfterOverlapping(h, d, bytes, !load, stream);
      if (profiling_)
        profile_.before(in.kernel(),
                        load ? cuda::ProfileStream::Loads
                             : cuda::ProfileStream::Stores,
                        stream);
      checkCuda(cuda::memcpyAsync(load ? d : h, load ? h : d, bytes,
                                load ? cudaMemcpyHostToDevice
                                     : cudaMemcpyDeviceToHost,
                                stream),
                "host-device copy");
      if (profiling_)
        profile_.after(stream);
      checkCuda(cudaEventRecord(event(I(1)), stream), "event record");
      // `wait` on this event also covers every transfer issued before it
      // in the other direction, as the CPU's one FIFO queue does.
      checkCuda(cudaEventRecord(otherMark(I(1)), load ? stores_ : loads_),
                "event record");
      cudaEvent_t done = pooledEvent();
      checkCuda(cudaEventRecord(done, stream), "event record");
      inFlight_.push_back(Transfer{h, h + bytes, d, d + bytes, !load, done});
      hostLinkBytes_ += static_cast<uint64_t>(bytes);
      return;
    }
    case Kernel::Wait:
      checkCuda(cudaStreamWaitEvent(compute_, event(I(0)), 0), "stream wait");
      checkCuda(cudaStreamWaitEvent(compute_, otherMark(I(0)), 0),
                "stream wait");
      return;
    case Kernel::PhaseBegin: {
      const auto *names = current_->phase_names();
      int64_t id = I(0);
      std::string label = names && id >= 0 && id < names->size()
                              ? names->Get(id)->str()
                              : "phase";
      nvtxRangePushA(label.c_str());
      return;
    }
    case Kernel::PhaseEnd:
      nvtxRangePop();
      return;
    default:
      break;
    }
    // Each buffer's reach, the kernel's checks and its disjoint buffers.
    checkKernelCall(in, registers);
    size_t nb = in.buffers() ? in.buffers()->size() : 0;
    std::vector<char *> buf(nb);
    for (size_t b = 0; b < nb; ++b)
      buf[b] = address(in.buffers()->Get(b), registers, false);
    cudaStream_t s = compute_;
    if (profiling_)
      profile_.before(in.kernel(), cuda::ProfileStream::Compute, s);
    dispatch(in, kernel, registers, buf, nb, s);
    if (profiling_)
      profile_.after(s);
  }

  // One kernel instruction on the compute stream, its buffers resolved.
  void dispatch(const fxe::Instr &in, Kernel kernel,
                const std::vector<int64_t> &registers,
                const std::vector<char *> &buf, size_t nb, cudaStream_t s) {
    auto I = [&](size_t k) {
      return evaluateAffine(in.ints()->Get(k), registers);
    };
    auto F = [&](size_t k) { return in.floats()->Get(k); };
    auto f = [&](size_t b) { return reinterpret_cast<float *>(buf[b]); };
    auto i32 = [&](size_t b) { return reinterpret_cast<int32_t *>(buf[b]); };
    // Kernels whose CUDA body needs the workspace the compiler plans (its
    // sums in a fixed order): executables from before it lack the buffer.
    auto needWorkspace = [&](size_t b) {
      if (b >= nb)
        throw RuntimeError(fmt::format(
            "{} has no workspace buffer, which the CUDA backend needs: the "
            "executable was compiled by an earlier ferry; compile it again "
            "(ferry compile, or ferry train --no-cache)",
            kernels::kernelName(kernel)));
      return b;
    };
    switch (kernel) {
    case Kernel::Copy: {
      int64_t bytes = I(0);
      if (buf[0] == buf[1] || bytes <= 0)
        break;
      if (buf[0] < buf[1] + bytes && buf[1] < buf[0] + bytes) {
        // Overlapping ranges (memmove on the CPU): through a temporary.
        void *staged = nullptr;
        checkCuda(cudaMallocAsync(&staged, bytes, s), "copy staging");
        checkCuda(
            cuda::memcpyAsync(staged, buf[0], bytes, cudaMemcpyDeviceToDevice, s),
            "copy");
        checkCuda(
            cuda::memcpyAsync(buf[1], staged, bytes, cudaMemcpyDeviceToDevice, s),
            "copy");
        checkCuda(cudaFreeAsync(staged, s), "copy staging");
        break;
      }
      checkCuda(
          cuda::memcpyAsync(buf[1], buf[0], bytes, cudaMemcpyDeviceToDevice, s),
          "copy");
      break;
    }
    case Kernel::Fill:
      cuda::fill(s, f(0), I(0), static_cast<float>(F(0)));
      break;
    case Kernel::FillI32:
      cuda::fillInt(s, i32(0), I(0), static_cast<int32_t>(I(1)));
      break;
    case Kernel::AllReduce:
      beginCollective(in, I(0), 0, I(1), buf);
      nccl_->allReduce(f(0), f(1), I(0), s,
                       describeCollective(in, I(0), current_->name()->str()));
      break;
    case Kernel::ReduceScatter: {
      int64_t count = I(0), shard = I(1), replicas = I(2);
      beginCollective(in, count, shard, replicas, buf);
      const float *whole = f(0);
      if (count < shard * replicas) { // padded with zeros in the workspace
        checkCuda(cuda::memcpyAsync(f(2), f(0), count * 4,
                                  cudaMemcpyDeviceToDevice, s),
                  "reduce-scatter padding");
        checkCuda(cuda::memsetAsync(f(2) + count, 0,
                                  (shard * replicas - count) * 4, s),
                  "reduce-scatter padding");
        whole = f(2);
      }
      nccl_->reduceScatter(whole, f(1), shard, s,
                           describeCollective(in, count,
                                              current_->name()->str()));
      break;
    }
    case Kernel::AllGather: {
      int64_t count = I(0), shard = I(1), replicas = I(2);
      beginCollective(in, count, shard, replicas, buf);
      bool padded = count < shard * replicas;
      nccl_->allGather(f(0), padded ? f(2) : f(1), shard, s,
                       describeCollective(in, count, current_->name()->str()));
      if (padded)
        checkCuda(cuda::memcpyAsync(f(1), f(2), count * 4,
                                  cudaMemcpyDeviceToDevice, s),
                  "all-gather unpadding");
      break;
    }
    case Kernel::Gemm:
    case Kernel::GemmEpilogue: {
      // [a, b, c, (vector), (workspace)]: the workspace holds the 16-bit
      // copies of A and B (training.precision: bf16 / fp16; 4 bytes per
      // element planned), then cuBLASLt's scratch.
      bool fused = kernel == Kernel::GemmEpilogue;
      size_t w = fused ? 4 : 3;
      cuda::GemmCall g;
      g.batch = I(0), g.m = I(1), g.n = I(2), g.k = I(3);
      g.transA = I(4) != 0, g.transB = I(5) != 0;
      g.strideA = I(6), g.strideB = I(7), g.strideC = I(8);
      g.beta = I(9) ? 1.0f : 0.0f;
      g.alpha = static_cast<float>(F(0));
      g.a = f(0), g.b = f(1), g.c = f(2);
      g.inputType = in.ints()->size() > 10 ? static_cast<int>(I(10)) : 0;
      g.epilogue = fused ? static_cast<int>(I(11)) : 0;
      g.vector = fused ? f(3) : nullptr;
      if (g.batch <= 0 || g.m <= 0 || g.n <= 0)
        break;
      if (g.k <= 0) { // an empty product (cuBLAS rejects ld = 0), as the CPU
        if (g.beta == 0.0f)
          cuda::fill(s, g.c, (g.batch - 1) * g.strideC + g.m * g.n, 0.0f);
        if (g.epilogue == 1)
          cuda::biasAdd(s, g.c, g.vector, g.c, g.batch * g.m, g.n);
        else if (g.epilogue == 2)
          cuda::fill(s, g.vector, g.m, 0.0f);
        break;
      }
      char *workspace = nb > w ? buf[w] : nullptr;
      int64_t workspaceBytes = nb > w ? in.buffers()->Get(w)->bytes() : 0;
      // Offsets in the workspace rounded up to 256 bytes (what cuBLASLt's
      // fastest kernels and its scratch want; the arena aligns to 64).
      auto align = [&](int64_t offset) {
        auto address = reinterpret_cast<uintptr_t>(workspace) + offset;
        return offset + static_cast<int64_t>((256 - address % 256) % 256);
      };
      int64_t used = 0;
      if (g.inputType != 0 && workspace) {
        // 16-bit copies of A and B: 2 bytes per element of the 4 planned,
        // so the alignment padding fits.
        int64_t extentA = (g.batch - 1) * g.strideA + g.m * g.k;
        int64_t extentB = (g.batch - 1) * g.strideB + g.k * g.n;
        if (4 * (extentA + extentB) > workspaceBytes)
          throw RuntimeError("gemm: the bf16 workspace is too small; the "
                             "executable is damaged: recompile it");
        int64_t offsetA = align(0);
        int64_t offsetB = align(offsetA + 2 * extentA);
        if (offsetB + 2 * extentB > workspaceBytes) { // tiny: no room to pad
          offsetA = 0;
          offsetB = 2 * extentA;
        }
        cuda::roundToHalf(s, f(0), workspace + offsetA, extentA,
                          g.inputType == 2);
        cuda::roundToHalf(s, f(1), workspace + offsetB, extentB,
                          g.inputType == 2);
        g.a = workspace + offsetA;
        g.b = workspace + offsetB;
        used = std::max(4 * (extentA + extentB), offsetB + 2 * extentB);
      } else {
        g.inputType = 0;
      }
      if (workspace && workspaceBytes > align(used)) {
        g.workspace = workspace + align(used);
        g.workspaceBytes = static_cast<size_t>(workspaceBytes - align(used));
      }
      // The bias gradient is the sum of the unrounded A (as on the CPU):
      // with 16-bit inputs, cuBLASLt would sum the rounded copy, so the sum
      // is its own kernel there.
      int epilogue = g.epilogue;
      if (epilogue == 2 && g.inputType != 0)
        g.epilogue = 0;
      if (lt_->run(g, s)) {
        if (epilogue == 2 && g.epilogue == 0)
          cuda::reduce(s, 0, f(0), g.vector, 1, g.k, g.m, scratch_);
        break;
      }
      g.epilogue = epilogue;
      // No cuBLASLt algorithm for this call: the GEMM, then the epilogue
      // as its own kernel.
      cuda::gemmEx(cublas_, s, g.batch, g.m, g.n, g.k, g.transA, g.transB,
                   g.alpha, g.a, g.strideA, g.b, g.strideB, g.beta, g.c,
                   g.strideC, g.inputType);
      if (g.epilogue == 1)
        cuda::biasAdd(s, g.c, g.vector, g.c, g.batch * g.m, g.n);
      else if (g.epilogue == 2) // ferry's A is [k, m]: sum its rows
        cuda::reduce(s, 0, f(0), g.vector, 1, g.k, g.m, scratch_);
      break;
    }
    case Kernel::Attention: // [q, k, v, mask, out, lse]
      cuda::attention(s, f(0), f(1), f(2), f(3), f(4), f(5),
                      attentionShape(I, F, in.ints()->size()));
      break;
    case Kernel::AttentionGrad: // [q, k, v, mask, out, lse, dout, dq, dk, dv,
                                //  workspace]
      cuda::attentionGrad(s, f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7),
                          f(8), f(9), f(10),
                          attentionShape(I, F, in.ints()->size()));
      break;
    case Kernel::Iota:
      cuda::iota(s, i32(0), I(0), I(1), I(2));
      break;
    case Kernel::AttentionMask:
      cuda::attentionMask(s, i32(0), f(1), I(0), static_cast<float>(F(0)));
      break;
    case Kernel::Embedding:
      cuda::embedding(s, f(0), i32(1), f(2), I(0), I(1), I(2));
      break;
    case Kernel::EmbeddingGrad:
      cuda::embeddingGrad(s, i32(0), f(1), f(2), I(0), I(1), I(2),
                          in.ints()->size() > 3 && I(3) != 0,
                          i32(needWorkspace(3)));
      break;
    case Kernel::GatherPositions:
      cuda::gatherPositions(s, f(0), i32(1), f(2), I(0), I(1), I(2), I(3));
      break;
    case Kernel::GatherPositionsGrad:
      cuda::gatherPositionsGrad(s, i32(0), f(1), f(2), I(0), I(1), I(2), I(3));
      break;
    case Kernel::Take:
      cuda::take(s, f(0), f(1), I(0), I(1), I(2), I(3));
      break;
    case Kernel::TakeGrad:
      cuda::takeGrad(s, f(0), f(1), I(0), I(1), I(2), I(3));
      break;
    case Kernel::BiasAdd:
      cuda::biasAdd(s, f(0), f(1), f(2), I(0), I(1));
      break;
    case Kernel::Add:
    case Kernel::Sub:
    case Kernel::Mul:
    case Kernel::Div:
      cuda::binary(s,
                   kernel == Kernel::Add   ? 0
                   : kernel == Kernel::Sub ? 1
                   : kernel == Kernel::Mul ? 2
                                           : 3,
                   f(0), f(1), f(2), I(0));
      break;
    case Kernel::Accumulate:
      cuda::accumulate(s, f(1), f(0), I(0));
      break;
    case Kernel::Scale:
      cuda::scale(s, f(0), f(1), I(0), static_cast<float>(F(0)));
      break;
    case Kernel::Gelu:
      cuda::gelu(s, f(0), f(1), I(0));
      break;
    case Kernel::GeluGrad:
      cuda::geluGrad(s, f(0), f(1), f(2), I(0));
      break;
    case Kernel::Tanh:
      cuda::tanhForward(s, f(0), f(1), I(0));
      break;
    case Kernel::TanhGrad:
      cuda::tanhGrad(s, f(0), f(1), f(2), I(0));
      break;
    case Kernel::LayerNorm:
      cuda::layerNorm(s, f(0), f(1), f(2), f(3), I(0), I(1),
                      static_cast<float>(F(0)));
      break;
    case Kernel::LayerNormGrad:
      cuda::layerNormGrad(s, f(0), f(1), f(2), f(3), f(4), f(5), I(0), I(1),
                          static_cast<float>(F(0)), f(needWorkspace(6)),
                          scratch_);
      break;
    case Kernel::Softmax:
      cuda::softmax(s, f(0), f(1), f(2), I(0), I(1), I(2));
      break;
    case Kernel::SoftmaxGrad:
      cuda::softmaxGrad(s, f(0), f(1), f(2), I(0), I(1));
      break;
    case Kernel::Dropout:
      cuda::dropout(s, f(0), f(1), I(0), I(1), static_cast<uint64_t>(I(2)),
                    static_cast<uint32_t>(I(3)), static_cast<uint32_t>(I(4)),
                    static_cast<uint64_t>(I(5)), static_cast<float>(F(0)));
      break;
    case Kernel::SoftmaxDropout:
      cuda::softmaxDropout(
          s, f(0), f(1), f(2), f(3), I(0), I(1), I(2), I(4),
          static_cast<uint64_t>(I(5)), static_cast<uint32_t>(I(6)),
          static_cast<uint32_t>(I(7)), static_cast<uint64_t>(I(8)),
          static_cast<float>(F(0)));
      break;
    case Kernel::ResidualLayerNorm:
      cuda::residualLayerNorm(
          s, f(0), f(1), f(2), f(3), f(4), f(5), I(0), I(1),
          static_cast<float>(F(0)), I(3), static_cast<uint64_t>(I(4)),
          static_cast<uint32_t>(I(5)), static_cast<uint32_t>(I(6)),
          static_cast<uint64_t>(I(7)), static_cast<float>(F(1)));
      break;
    case Kernel::DropoutSoftmaxGrad:
      cuda::dropoutSoftmaxGrad(
          s, f(0), f(1), f(2), I(0), I(1), I(3), static_cast<uint64_t>(I(4)),
          static_cast<uint32_t>(I(5)), static_cast<uint32_t>(I(6)),
          static_cast<uint64_t>(I(7)), static_cast<float>(F(0)));
      break;
    case Kernel::Transpose: {
      int64_t rank = I(0), dims[6], perm[6];
      for (int64_t d = 0; d < rank && d < 6; ++d) {
        dims[d] = I(1 + d);
        perm[d] = I(1 + rank + d);
      }
      cuda::transpose(s, f(0), f(1), static_cast<int32_t>(rank), dims, perm);
      break;
    }
    case Kernel::Reduce:
      cuda::reduce(s, static_cast<int32_t>(I(0)), f(0), f(1), I(1), I(2), I(3),
                   scratch_);
      break;
    case Kernel::Broadcast:
      cuda::broadcast(s, f(0), f(1), I(0), I(1), I(2));
      break;
    case Kernel::SoftmaxCrossEntropy:
      cuda::softmaxCrossEntropy(s, f(0), i32(1), f(2), f(3), I(0), I(1), I(2),
                                reinterpret_cast<double *>(
                                    f(needWorkspace(4))));
      break;
    case Kernel::SoftmaxCrossEntropyGrad:
      cuda::softmaxCrossEntropyGrad(s, f(0), i32(1), f(2), f(3), f(4), I(0),
                                    I(1), I(2));
      break;
    case Kernel::ArgmaxCorrect:
      cuda::argmaxCorrect(s, f(0), i32(1), f(2), f(3), I(0), I(1), I(2),
                          reinterpret_cast<double *>(f(needWorkspace(4))));
      break;
    case Kernel::GlobalNorm: {
      size_t count = nb - 1;
      std::vector<const float *> tensors(count);
      std::vector<int64_t> sizes(count);
      for (size_t t = 0; t < count; ++t) {
        tensors[t] = f(t);
        sizes[t] = I(t);
      }
      cuda::globalNorm(s, tensors.data(), sizes.data(),
                       static_cast<int64_t>(count), f(count), scratch_);
      break;
    }
    case Kernel::LearningRate:
      // A scalar of the step: computed on the host, written on the stream.
      cuda::fill(s, f(0), 1,
                 learningRate(static_cast<int32_t>(I(0)), F(0), I(1), I(2),
                              F(1), I(3), I(4)));
      break;
    case Kernel::OptimizerUpdate:
    case Kernel::LambMoments:
    case Kernel::LambApply: {
      // One parameter set for the whole update and LAMB's two halves; the
      // fp16 loss scale, when given, is buffer 6 of each.
      cuda::AdamParams params{static_cast<float>(F(0)),
                              static_cast<float>(F(1)),
                              static_cast<float>(F(2)),
                              static_cast<float>(F(3)),
                              F(3) != 0.0,
                              kernel != Kernel::OptimizerUpdate || I(3) != 0,
                              I(2) + 1,
                              nb > 6 ? f(6) : nullptr};
      if (4 * I(1) > cuda::kScratchDoubles)
        throw RuntimeError(fmt::format("{} with more than {} segments",
                                       kernels::kernelName(kernel),
                                       cuda::kScratchDoubles / 4));
      if (kernel == Kernel::OptimizerUpdate) // [w, g, m, v, lr, norm]
        cuda::adamUpdate(s, f(0), f(1), f(2), f(3), I(0), I(1), f(4), f(5),
                         static_cast<float>(F(4)), params, scratch_);
      else if (kernel == Kernel::LambMoments) // [w, g, m, v, norm, sums]
        cuda::lambMoments(s, f(0), f(1), f(2), f(3), I(0), I(1), f(4),
                          static_cast<float>(F(4)), params, f(5), scratch_);
      else // [w, m, v, lr, norm, sums]
        cuda::lambApply(s, f(0), f(1), f(2), I(0), I(1), f(3), f(4), params,
                        f(5), scratch_);
      break;
    }
    default:
      throw RuntimeError(
          fmt::format("kernel {} has no CUDA implementation", in.kernel()));
    }
  }

  char *arena_ = nullptr, *host_ = nullptr;
  double *scratch_ = nullptr;
  uint64_t arenaBytes_ = 0, hostBytes_ = 0, peakBytes_ = 0, hostLinkBytes_ = 0;
  cudaStream_t compute_ = nullptr, loads_ = nullptr, stores_ = nullptr;
  std::vector<Transfer> inFlight_;
  std::vector<cudaEvent_t> eventPool_;
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<cuda::LtGemm> lt_; // after the device check
  std::map<int64_t, cudaEvent_t> events_;
  const fxe::Program *current_ = nullptr;
  bool profiling_ = false;
  cuda::KernelProfile profile_;
  std::unique_ptr<cuda::NcclGroup> nccl_; // when the program has collectives
};

} // namespace

std::unique_ptr<Backend>
ferry::createCudaBackend(const fxe::Executable &executable,
                         std::optional<uint64_t> limitBytes,
                         comm::Communicator *group) {
  return std::make_unique<CudaBackend>(executable, limitBytes, group);
}

const ferry::BackendInfo &ferry::cudaBackendInfo() {
  static const BackendInfo info{
      "cuda", createCudaBackend, [] {
        CudaDeviceReport report = queryCudaDevices();
        return DeviceList{report.devices, report.reason};
      }};
  return info;
}
