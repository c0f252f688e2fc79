// The CUDA backend (see CudaBackend.h). The instruction stream is the one
// the CPU backend replays (same checks on load, same registers and loops);
// each kernel instruction becomes a launch on the compute stream, each
// load/store an async copy on the loads' or the stores' stream with an
// event, each wait a stream-wait on that event, so copies overlap compute as
// the compiler scheduled them, and loads overlap stores.
#include "runtime/cuda/CudaBackend.h"
#include "runtime/ByteSize.h"
#include "runtime/backend/Collectives.h"

#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/DeviceQuery.h"
#include "runtime/cuda/GemmInstr.h"
#include "runtime/cuda/KernelProfile.h"
#include "runtime/cuda/Launch.h"
#include "runtime/cuda/LtGemm.h"
#include "runtime/cuda/NcclGroup.h"
#include "runtime/cuda/StepTable.h"
#include "runtime/cuda/Transfers.h"
#include "runtime/executable/KernelTable.h"
#include "runtime/executable/Validate.h"
#include "runtime/random/Philox.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <vector>

using namespace ferry;

namespace {

using cuda::checkCuda;
using kernels::Kernel;

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
    // The compiler never took its own machine for this GPU: a plan larger
    // than the device is refused here, with what to change.
    cudaError_t allocated =
        cudaMalloc(&arena_, std::max<uint64_t>(arenaBytes_, 64));
    if (allocated == cudaErrorMemoryAllocation)
      throw RuntimeError(fmt::format(
          "the plan needs {} of device memory ({} bytes) but this GPU cannot "
          "allocate it ({}); recompile for this device (execution.target, or "
          "execution.device_memory_limit below its memory), lower "
          "execution.micro_batch_size, set execution.recompute: layer, or use "
          "execution.mode: phased",
          formatByteSize(arenaBytes_), arenaBytes_,
          cudaGetErrorString(allocated)));
    checkCuda(allocated, fmt::format("allocation of the {} arena",
                                     formatByteSize(arenaBytes_))
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
    // synchronous copy) never serialises it.
    checkCuda(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking),
              "stream creation");
    transfers_ = std::make_unique<cuda::Transfers>(compute_);
    steps_ = std::make_unique<cuda::StepTable>();
    checkCuda(cudaMalloc(&scratch_, cuda::kScratchDoubles * sizeof(double)),
              "scratch");
    if (cublasCreate(&cublas_.handle) != CUBLAS_STATUS_SUCCESS)
      throw RuntimeError("cuBLAS could not be initialised on this device");
    // cuBLAS's own workspace, so that its fallback GEMMs never allocate
    // (a CUDA graph may be capturing): NVIDIA recommends 32 MiB on Hopper;
    // the fallback is rare, so 4 MiB. Set again after every cublasSetStream
    // (cuda::gemmEx), which resets it to the default pool.
    checkCuda(cudaMalloc(&cublas_.workspace, kCublasWorkspaceBytes),
              "cuBLAS workspace");
    cublas_.workspaceBytes = kCublasWorkspaceBytes;
    if (cublasSetWorkspace(cublas_.handle, cublas_.workspace,
                           kCublasWorkspaceBytes) != CUBLAS_STATUS_SUCCESS)
      throw RuntimeError("cuBLAS refused its workspace");
    lt_ = std::make_unique<cuda::LtGemm>();
    if (hasCollectives(exe))
      nccl_ = std::make_unique<cuda::NcclGroup>(*group_);
    // No kernel allocates: every scratch is planned or the backend's own,
    // which is what lets a program be captured as a CUDA graph.
  }

  // Tensor parallelism: the tensor group's communicator, made here (every
  // rank sets its group right after construction), after the data group's
  // in the constructor: the same order on every rank.
  void setTensorGroup(comm::Communicator *tensor) override {
    Backend::setTensorGroup(tensor);
    if (tensor && nccl_ && !tensorNccl_)
      tensorNccl_ = std::make_unique<cuda::NcclGroup>(*tensor);
  }

  ~CudaBackend() override {
    cudaDeviceSynchronize();
    graphs_.clear();
    transfers_.reset();
    steps_.reset();
    if (cublas_.handle)
      cublasDestroy(cublas_.handle);
    cudaFree(cublas_.workspace);
    cudaFree(scratch_);
    cudaStreamDestroy(compute_);
    cudaFree(arena_);
    cudaFreeHost(host_);
  }

  void initialiseStates(uint64_t seed) override {
    for (const fxe::State *s : *exe_.states()) {
      std::vector<char> values(static_cast<size_t>(s->bytes()));
      initialStateValues(s, seed, values.data(), group_->rank(), tensorRank());
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
    prepare(p, registers);
    // A program's first run launches directly, and only a later run is
    // captured: what happens once happens outside the capture (lazy module
    // loading, cuBLASLt's first-call set-up, NCCL's connections), and a
    // program that fails directly is never captured. Replicated runs too:
    // NCCL's collectives are captured with the kernels (NCCL 2.9 and later),
    // as nodes of the compute stream, in the order every rank issues them.
    bool replayGraph = graphReplay_ && ranDirectly_.count(&p);
    if (profiling_)
      profile_.programStart(name, compute_, replayGraph);
    // This run's inputs and the values derived from them, where the
    // kernels (and a captured graph) read them.
    steps_->upload(inputs, compute_);
    try {
      if (replayGraph)
        launchGraph(p, registers);
      else
        replay(*p.instrs(), 0, p.instrs()->size(), registers);
      ranDirectly_.insert(&p);
    } catch (...) {
      // What was queued finishes before the error leaves: the next run
      // rewrites the per-run values' pinned copy and starts from idle
      // streams (Transfers.h).
      if (!nccl_)
        cudaDeviceSynchronize();
      (void)cudaGetLastError();
      throw;
    }
    // With collectives, every stream may wait behind an NCCL call (copies
    // wait on the compute stream): poll them all with the collective
    // timeout, never block.
    cudaStream_t loads = transfers_->loads(), stores = transfers_->stores();
    for (cuda::NcclGroup *group : {nccl_.get(), tensorNccl_.get()})
      if (group)
        for (cudaStream_t stream : {compute_, loads, stores})
          group->synchronize(stream, "program " + name);
    checkCuda(cudaStreamSynchronize(loads), "copy stream (loads)");
    checkCuda(cudaStreamSynchronize(stores), "copy stream (stores)");
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
  void setGraphReplay(bool on) override { graphReplay_ = on; }
  std::string profileReport() const override { return profile_.report(); }
  std::string name() const override { return "cuda"; }

private:
  void checkRange(const fxe::State *s, int64_t offset, int64_t bytes) const {
    if (offset < 0 || bytes < 0 || offset + bytes > s->bytes())
      throw RuntimeError("access outside state " + s->name()->str());
  }

  // Per-kernel timing events: not while capturing (a graph is timed whole).
  bool timing() const { return profiling_ && !capturing_; }

  // An instruction's integer parameter or offset. While capturing, an
  // input register it depends on is baked into the graph: the graph is
  // kept for those inputs' values only (captured again when they change).
  int64_t value(const fxe::Affine *a, const std::vector<int64_t> &registers) {
    if (capturing_ && a->coeffs())
      for (flatbuffers::uoffset_t r = 0;
           r < a->coeffs()->size() && r < numInputs_; ++r)
        if (a->coeffs()->Get(r) != 0)
          baked_.insert(static_cast<int>(r));
    return evaluateAffine(a, registers);
  }

  // A parameter that changes from run to run (a sample offset, the step):
  // evaluated by the kernel from the input registers in device memory.
  StepValue stepValue(const fxe::Affine *a,
                      const std::vector<int64_t> &registers) {
    StepValue v;
    v.base = a->constant();
    v.inputs = steps_->deviceInputs();
    if (const auto *coeffs = a->coeffs())
      for (flatbuffers::uoffset_t r = 0; r < coeffs->size(); ++r) {
        int64_t c = coeffs->Get(r);
        if (c == 0)
          continue;
        if (r < numInputs_ && r < StepValue::kInputs) {
          v.coeffs[r] = c;
          continue;
        }
        v.base += c * registers[r];
        if (capturing_ && r < numInputs_)
          baked_.insert(static_cast<int>(r));
      }
    return v;
  }

  // The per-run scalars of a learning_rate or optimizer instruction in the
  // step table (registered by prepare(), `add`), or null for other kernels.
  const float *stepScalars(const fxe::Instr &in,
                           const std::vector<int64_t> &registers, bool add) {
    auto I = [&](size_t k) { return value(in.ints()->Get(k), registers); };
    auto F = [&](size_t k) { return in.floats()->Get(k); };
    switch (static_cast<Kernel>(in.kernel())) {
    case Kernel::LearningRate:
      return steps_->learningRate(static_cast<int32_t>(I(0)), F(0), I(1), I(2),
                                  F(1), I(3),
                                  stepValue(in.ints()->Get(4), registers), add);
    case Kernel::OptimizerUpdate:
    case Kernel::LambMoments:
    case Kernel::LambApply: { // t = step + 1, betas as the kernels take them
      StepValue t = stepValue(in.ints()->Get(2), registers);
      t.base += 1;
      return steps_->adamCorrections(static_cast<float>(F(0)),
                                     static_cast<float>(F(1)), t, add);
    }
    default:
      return nullptr;
    }
  }

  // Before a program's first run: its per-run scalars get their slots.
  void prepare(const fxe::Program &p, std::vector<int64_t> registers) {
    numInputs_ = p.inputs() ? p.inputs()->size() : 0;
    if (!prepared_.insert(&p).second)
      return;
    replayInstrs(*p.instrs(), 0, p.instrs()->size(), registers,
                 [&](const fxe::Instr &in, const std::vector<int64_t> &regs) {
                   stepScalars(in, regs, true);
                 });
  }

  // A program captured once as a CUDA graph, for the values of the input
  // registers it baked in (none for ferry's programs: the step and the
  // replica reach the kernels through the step table).
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    std::vector<std::pair<int, int64_t>> baked;
    size_t nodes = 0;
    uint64_t hostLinkBytes = 0, collectiveBytes = 0;
    ~Graph() {
      if (exec)
        cudaGraphExecDestroy(exec);
    }
  };

  void launchGraph(const fxe::Program &p, std::vector<int64_t> &registers) {
    std::unique_ptr<Graph> &g = graphs_[&p];
    bool stale = false;
    if (g)
      for (auto [r, v] : g->baked)
        stale = stale || registers[r] != v;
    if (!g || stale) {
      g.reset(); // its memory goes before the new capture's
      g = capture(p, registers);
    }
    checkCuda(cudaGraphLaunch(g->exec, compute_), "CUDA graph launch");
    ++cuda::launchCount();
    hostLinkBytes_ += g->hostLinkBytes;
    collectiveBytes_ += g->collectiveBytes;
    if (profiling_)
      profile_.graphLaunched(compute_, g->nodes);
  }

  // Records the program's launches, copies and events into a graph
  // (nothing runs) and instantiates it. A failure names the program and
  // the way around it.
  std::unique_ptr<Graph> capture(const fxe::Program &p,
                                 std::vector<int64_t> &registers) {
    try {
      return captureOrThrow(p, registers);
    } catch (const std::runtime_error &e) { // RuntimeError, a launch's
      throw RuntimeError(fmt::format(
          "{} (while capturing program {} as a CUDA graph; --set "
          "execution.cuda_graphs=false launches its kernels directly)",
          e.what(), p.name()->str()));
    }
  }
  std::unique_ptr<Graph> captureOrThrow(const fxe::Program &p,
                                        std::vector<int64_t> &registers) {
    auto g = std::make_unique<Graph>();
    uint64_t launches = cuda::launchCount(), linkBytes = hostLinkBytes_,
             sent = collectiveBytes_;
    checkCuda(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeGlobal),
              "stream capture");
    capturing_ = true;
    baked_.clear();
    cudaGraph_t graph = nullptr;
    try {
      transfers_->beginCapture();
      replay(*p.instrs(), 0, p.instrs()->size(), registers);
      transfers_->endCapture();
    } catch (...) {
      capturing_ = false;
      // The copy streams rejoin the compute stream first: a capture ended
      // while they are still forked fails as unjoined and leaves them in
      // the invalidated capture, where their next copy would fail.
      transfers_->joinCapture();
      cudaStreamEndCapture(compute_, &graph); // ends it, whatever its state
      if (graph)
        cudaGraphDestroy(graph);
      (void)cudaGetLastError();
      transfers_->abandonCapture();
      cuda::launchCount() = launches;
      hostLinkBytes_ = linkBytes;
      collectiveBytes_ = sent;
      throw;
    }
    capturing_ = false;
    cuda::launchCount() = launches; // captured calls launch nothing
    // What the captured copies and collectives move, counted at each launch.
    g->hostLinkBytes = hostLinkBytes_ - linkBytes;
    hostLinkBytes_ = linkBytes;
    g->collectiveBytes = collectiveBytes_ - sent;
    collectiveBytes_ = sent;
    checkCuda(cudaStreamEndCapture(compute_, &graph), "stream capture");
    cudaError_t e = cudaGraphInstantiate(&g->exec, graph, 0);
    if (e == cudaSuccess)
      e = cudaGraphGetNodes(graph, nullptr, &g->nodes);
    cudaGraphDestroy(graph);
    checkCuda(e, "CUDA graph instantiation");
    for (int r : baked_)
      g->baked.push_back({r, registers[r]});
    return g;
  }

  void replay(const flatbuffers::Vector<flatbuffers::Offset<fxe::Instr>> &v,
              size_t begin, size_t end, std::vector<int64_t> &registers) {
    replayInstrs(v, begin, end, registers,
                 [&](const fxe::Instr &in, const std::vector<int64_t> &regs) {
                   execute(in, regs);
                 });
  }

  char *address(const fxe::Ref *r, const std::vector<int64_t> &registers,
                bool hostSide) {
    int64_t offset = value(r->offset(), registers);
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

  // The Transfer family (dialects/rt/kernels/Transfer.td), which the
  // backend carries out itself: copies on its copy streams (Transfers.h),
  // waits on their events, phases as NVTX ranges.
  void transfer(const fxe::Instr &in, const std::vector<int64_t> &registers) {
    const std::vector<char *> noBuffers;
    const CudaCall call(*this, in, registers, noBuffers);
    auto kernel = static_cast<Kernel>(in.kernel());
    switch (kernel) {
    case Kernel::Load:
    case Kernel::Store: {
      const bool load = kernel == Kernel::Load;
      int64_t bytes = 0, event = 0;
      if (load) {
        kernels::LoadArgs a = kernels::decodeLoad(call);
        if (a.has_limit && a.guard >= a.limit)
          return; // a prefetch past the last iteration
        bytes = a.bytes, event = a.event;
      } else {
        kernels::StoreArgs a = kernels::decodeStore(call);
        bytes = a.bytes, event = a.event;
      }
      // load: [src host, dst device]; store: [src device, dst host].
      char *h = address(in.buffers()->Get(load ? 0 : 1), registers, true);
      char *d = address(in.buffers()->Get(load ? 1 : 0), registers, false);
      transfers_->copy(load, h, d, bytes, event, timing() ? &profile_ : nullptr,
                       in.kernel());
      hostLinkBytes_ += static_cast<uint64_t>(bytes);
      return;
    }
    case Kernel::Wait:
      transfers_->wait(kernels::decodeWait(call).event);
      return;
    case Kernel::PhaseBegin: {
      const auto *names = current_->phase_names();
      int64_t id = kernels::decodePhaseBegin(call).phase;
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
      throw RuntimeError(
          fmt::format("kernel {} is no transfer", kernels::kernelName(kernel)));
    }
  }

  void execute(const fxe::Instr &in, const std::vector<int64_t> &registers) {
    auto kernel = static_cast<Kernel>(in.kernel());
    if (kernels::backendOwned(kernel)) {
      transfer(in, registers);
      return;
    }
    // Each buffer's reach, the kernel's checks and its disjoint buffers.
    checkKernelCall(in, registers);
    size_t nb = in.buffers() ? in.buffers()->size() : 0;
    std::vector<char *> buf(nb);
    for (size_t b = 0; b < nb; ++b)
      buf[b] = address(in.buffers()->Get(b), registers, false);
    cudaStream_t s = compute_;
    if (timing())
      profile_.before(in.kernel(), cuda::ProfileStream::Compute, s);
    dispatch(in, kernel, registers, buf, s);
    if (timing())
      profile_.after(s);
  }

  // An instruction's operands as the generated decoding (KernelArgs.h)
  // reads them: integers through value(), so a capture bakes the inputs they
  // depend on; per-step integers evaluated without baking (their kernels
  // read them on the device, by index: stepValue); buffers at their
  // addresses, with the instruction's bf16 mask.
  struct CudaCall final : cuda::CallSteps {
    CudaCall(CudaBackend &backend, const fxe::Instr &in,
             const std::vector<int64_t> &registers,
             const std::vector<char *> &buf)
        : backend(backend), in(in), registers(registers), buf(buf) {}
    CudaBackend &backend;
    const fxe::Instr &in;
    const std::vector<int64_t> &registers;
    const std::vector<char *> &buf;
    mutable std::vector<int64_t> rest; // what integers() evaluated

    StepValue stepValue(const kernels::StepInt &integer) const override {
      return backend.stepValue(in.ints()->Get(integer.index), registers);
    }
    const float *stepScalars() const override {
      return backend.stepScalars(in, registers, false);
    }

    size_t integerCount() const { return in.ints() ? in.ints()->size() : 0; }
    int64_t integer(size_t k) const {
      return k < integerCount() ? backend.value(in.ints()->Get(k), registers)
                                : 0;
    }
    kernels::StepInt stepInteger(size_t k) const {
      return {evaluateAffine(in.ints()->Get(k), registers),
              static_cast<uint32_t>(k)};
    }
    kernels::IntList integers(size_t first) const {
      rest.clear();
      for (size_t k = first; k < integerCount(); ++k)
        rest.push_back(integer(k));
      return {rest.data(), rest.size()};
    }
    double real(size_t k) const {
      return in.floats() && k < in.floats()->size() ? in.floats()->Get(k) : 0.0;
    }
    char *buffer(size_t b) const { return b < buf.size() ? buf[b] : nullptr; }
    char *const *buffers() const { return buf.data(); }
    size_t bufferCount() const { return buf.size(); }
    bool bf16(size_t b) const {
      return b < 64 && (in.bf16_buffers() >> b & 1) != 0;
    }
    int64_t bufferBytes(size_t b) const {
      return b < buf.size() ? in.buffers()->Get(b)->bytes() : 0;
    }
  };

  // One kernel instruction on the compute stream, its buffers resolved.
  void dispatch(const fxe::Instr &in, Kernel kernel,
                const std::vector<int64_t> &registers,
                const std::vector<char *> &buf, cudaStream_t s) {
    // Its typed body (CudaKernelContext.h), in the file of its op family.
    const CudaCall call(*this, in, registers, buf);
    const Collectives collectives(*group_, tensor_, collectiveBytes_,
                                  current_->name()->c_str());
    cuda::KernelContext context{s,           scratch_,         &call,
                                lt_.get(),   &cublas_,         &collectives,
                                nccl_.get(), tensorNccl_.get()};
    if (!kernels::dispatchKernel(context, kernel, call))
      throw RuntimeError(fmt::format("kernel {} has no CUDA implementation",
                                     kernels::kernelName(kernel)));
  }

  char *arena_ = nullptr, *host_ = nullptr;
  double *scratch_ = nullptr;
  uint64_t arenaBytes_ = 0, hostBytes_ = 0, peakBytes_ = 0, hostLinkBytes_ = 0;
  cudaStream_t compute_ = nullptr;
  std::unique_ptr<cuda::Transfers> transfers_;
  std::unique_ptr<cuda::StepTable> steps_;
  cuda::Cublas cublas_;
  static constexpr size_t kCublasWorkspaceBytes = size_t(4) << 20;
  std::unique_ptr<cuda::LtGemm> lt_; // after the device check
  const fxe::Program *current_ = nullptr;
  bool profiling_ = false;
  bool graphReplay_ = true;
  bool capturing_ = false;
  flatbuffers::uoffset_t numInputs_ = 0; // of the running program
  std::set<int> baked_;                  // inputs the capture depends on
  std::set<const fxe::Program *> prepared_;
  std::map<const fxe::Program *, std::unique_ptr<Graph>> graphs_;
  cuda::KernelProfile profile_;
  // Programs that have run once without a graph (capture starts with the
  // second run).
  std::set<const fxe::Program *> ranDirectly_;
  std::unique_ptr<cuda::NcclGroup> nccl_; // when the program has collectives
  std::unique_ptr<cuda::NcclGroup> tensorNccl_; // and a tensor group
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
