// Executable validation, shared by every backend: the layout checks on load
// and the per-call checks that the kernel records declare.
#include "runtime/executable/Validate.h"

#include "runtime/ByteSize.h"
#include "runtime/Error.h"
#include "runtime/executable/KernelTable.h"
#include "runtime/executable/ShardLayout.h"

#include <fmt/format.h>

using namespace ferry;

int64_t ferry::evaluateAffine(const fxe::Affine *a,
                              const std::vector<int64_t> &registers) {
  int64_t v = a->constant();
  if (const auto *coeffs = a->coeffs())
    for (flatbuffers::uoffset_t r = 0; r < coeffs->size(); ++r)
      if (int64_t c = coeffs->Get(r)) {
        int64_t term = 0;
        if (__builtin_mul_overflow(c, registers[r], &term) ||
            __builtin_add_overflow(v, term, &v))
          throw RuntimeError("an address or parameter of the program "
                             "overflows 64 bits; the executable is damaged: "
                             "recompile it");
      }
  return v;
}

void ferry::validateExecutable(const fxe::Executable &exe_,
                               std::optional<uint64_t> limitBytes) {
  uint64_t arenaBytes_ = static_cast<uint64_t>(exe_.arena_bytes());
  if (limitBytes && arenaBytes_ > *limitBytes)
    throw RuntimeError(fmt::format(
        "the executable needs {} of device memory ({} bytes) but "
        "execution.device_memory_limit is {}; raise the limit or recompile "
        "for a smaller plan",
        formatByteSize(arenaBytes_), arenaBytes_, formatByteSize(*limitBytes)));
  // States: inside the arena (or host memory), sized as their shape says.
  if (exe_.state_bytes() < 0 ||
      static_cast<uint64_t>(exe_.state_bytes()) > arenaBytes_ ||
      exe_.host_bytes() < 0)
    throw RuntimeError("the executable's states end outside its arena");
  for (const fxe::State *s : *exe_.states()) {
    int64_t elements = 1;
    for (int64_t d : *s->shape())
      if (d < 0 || __builtin_mul_overflow(elements, d, &elements))
        throw RuntimeError("state " + s->name()->str() + " has a bad shape");
    int64_t bytes = 0, end = 0;
    int64_t width = s->dtype() == fxe::DType_BF16 ? 2 : 4;
    if (s->offset() < 0 || __builtin_mul_overflow(elements, width, &bytes) ||
        s->bytes() != bytes ||
        __builtin_add_overflow(s->offset(), s->bytes(), &end) ||
        end > (s->host() ? exe_.host_bytes() : exe_.state_bytes()) ||
        (s->stacked() && (s->shape()->size() == 0 || s->shape()->Get(0) < 1)))
      throw RuntimeError(fmt::format(
          "state {} (offset {}, {} bytes) does not fit the executable's "
          "layout; the executable is damaged: recompile it",
          s->name()->str(), s->offset(), s->bytes()));
    shardLayoutOf(s); // throws for inconsistent shard fields
    splitLayoutOf(s); // and split fields
  }
  // Check every instruction once, so a damaged or foreign program fails here
  // with its position rather than in a kernel.
  for (const fxe::Program *p : *exe_.programs()) {
    if (p->registers() < 0 ||
        p->inputs()->size() > static_cast<uint32_t>(p->registers()))
      throw RuntimeError("program " + p->name()->str() +
                         " has fewer registers than inputs");
    // Ends of the enclosing loop bodies, to check nesting.
    std::vector<size_t> bodyEnds = {p->instrs()->size()};
    for (flatbuffers::uoffset_t i = 0; i < p->instrs()->size(); ++i) {
      while (bodyEnds.size() > 1 && i >= bodyEnds.back())
        bodyEnds.pop_back();
      const fxe::Instr *in = p->instrs()->Get(i);
      auto where = [&] {
        return fmt::format("program {} instruction {}", p->name()->str(), i);
      };
      if (in->loop_count() > 0) {
        if (in->loop_body() < 0 ||
            i + 1 + static_cast<uint64_t>(in->loop_body()) > bodyEnds.back() ||
            in->loop_register() < 0 || in->loop_register() >= p->registers() ||
            in->loop_parity_register() < -1 ||
            in->loop_parity_register() >= p->registers())
          throw RuntimeError(where() + ": malformed loop");
        bodyEnds.push_back(i + 1 + in->loop_body());
        continue;
      }
      if (in->kernel() >= kernels::kKernelCount)
        throw RuntimeError(fmt::format(
            "{}: unknown kernel {}; the executable needs a newer ferry",
            where(), in->kernel()));
      const kernels::Signature &sig =
          kernels::signature(static_cast<kernels::Kernel>(in->kernel()));
      int nb = in->buffers() ? in->buffers()->size() : 0;
      int ni = in->ints() ? in->ints()->size() : 0;
      int nf = in->floats() ? in->floats()->size() : 0;
      if (nb < static_cast<int>(sig.minBuffers) ||
          ni < static_cast<int>(sig.minInts) ||
          nf < static_cast<int>(sig.minFloats))
        throw RuntimeError(fmt::format(
            "{}: kernel {} needs at least {} buffers, {} ints, {} floats; has "
            "{}, {}, {}",
            where(), sig.name, sig.minBuffers, sig.minInts, sig.minFloats, nb,
            ni, nf));
      for (int b = 0; b < nb; ++b) {
        const fxe::Ref *r = in->buffers()->Get(b);
        if (!r->offset())
          throw RuntimeError(where() + ": buffer without an offset");
        if (const auto *c = r->offset()->coeffs();
            c && c->size() > static_cast<uint32_t>(p->registers()))
          throw RuntimeError(where() + ": address uses an unknown register");
      }
      for (int k = 0; k < ni; ++k)
        if (const auto *c = in->ints()->Get(k)->coeffs();
            c && c->size() > static_cast<uint32_t>(p->registers()))
          throw RuntimeError(where() + ": parameter uses an unknown register");
    }
  }
}

void ferry::checkKernelCall(const fxe::Instr &in,
                            const std::vector<int64_t> &registers) {
  auto kernel = static_cast<kernels::Kernel>(in.kernel());
  const char *name = kernels::kernelName(in.kernel());
  size_t nb = in.buffers() ? in.buffers()->size() : 0;
  std::vector<int64_t> ints(in.ints() ? in.ints()->size() : 0);
  for (size_t k = 0; k < ints.size(); ++k)
    ints[k] = evaluateAffine(in.ints()->Get(k), registers);
  kernels::Resolved r = kernels::resolve(kernel, ints, nb);
  if (r.failedCheck)
    throw RuntimeError(
        fmt::format("{}: {}; the executable is damaged: recompile it", name,
                    r.failedCheck));
  uint64_t bf16 = in.bf16_buffers();
  if (nb < 64 && (bf16 >> nb) != 0)
    throw RuntimeError(fmt::format(
        "kernel {} marks buffer {} as bf16 but has {} buffers; the executable "
        "is damaged or was edited: recompile it",
        name, 63 - __builtin_clzll(bf16), nb));
  for (size_t b = 0; b < nb; ++b) {
    const kernels::BufferUse &use = r.buffers[b];
    bool half = b < 64 && (bf16 >> b & 1);
    if (half && !use.bf16)
      throw RuntimeError(fmt::format(
          "kernel {} stores its buffer {} as bf16, which it cannot take "
          "there; the executable is damaged or was edited: recompile it",
          name, b));
    int64_t need = 0;
    if (use.elements < 0 ||
        __builtin_mul_overflow(use.elements,
                               half ? 2 : kernels::elementBytes(use.type),
                               &need))
      need = -1;
    if (need < 0 || need > in.buffers()->Get(b)->bytes())
      throw RuntimeError(fmt::format(
          "kernel {} needs {} bytes in buffer {} but was given {}; the "
          "executable is damaged or was edited: recompile it",
          name, need, b, in.buffers()->Get(b)->bytes()));
  }
  // Buffers the kernel may not be given overlapping.
  auto range = [&](size_t b) {
    const fxe::Ref *ref = in.buffers()->Get(b);
    int64_t begin = evaluateAffine(ref->offset(), registers);
    return std::pair<int64_t, int64_t>{begin, begin + ref->bytes()};
  };
  for (auto [written, other] : r.disjoint) {
    auto [a0, a1] = range(written);
    auto [b0, b1] = range(other);
    if (a0 < b1 && b0 < a1 && a0 < a1 && b0 < b1)
      throw RuntimeError(fmt::format(
          "kernel {} writes buffer {} (bytes [{}, {})) overlapping its buffer "
          "{} (bytes [{}, {})), which it cannot do in place; the executable "
          "is damaged or was edited: recompile it",
          name, written, a0, a1, other, b0, b1));
  }
}
