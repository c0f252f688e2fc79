// The CPU backend's element-wise kernels: fills, iota, the attention mask,
// take, bias add, binary ops, scale, GELU and tanh with their gradients,
// transpose and broadcast.
#include "runtime/cpu/CpuKernelContext.h"
#include "runtime/cpu/CpuKernels.h"

#include "runtime/cpu/CpuKernelCommon.h"

namespace ferry::cpu {

void fill(float *out, int64_t n, float value) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = value;
}

void fillInt(int32_t *out, int64_t n, int32_t value) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = value;
}

void iota(int32_t *out, int64_t outer, int64_t size, int64_t inner) {
  const int64_t rows = outer * size;
#pragma omp parallel for schedule(static) if (worth(rows * inner))
  for (int64_t q = 0; q < rows; ++q) {
    const int32_t d = static_cast<int32_t>(q % size);
    int32_t *o = out + q * inner;
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i)
      o[i] = d;
  }
}

void attentionMask(const int32_t *mask, float *out, int64_t n, float fill) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = mask[i] != 0 ? 0.0f : fill;
}

void take(const float *x, float *out, int64_t outer, int64_t size,
          int64_t inner, int64_t index) {
#pragma omp parallel for schedule(static) if (worth(outer * inner))
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out + o * inner, x + (o * size + index) * inner,
                sizeof(float) * inner);
}

void takeGrad(const float *dy, float *dx, int64_t outer, int64_t size,
              int64_t inner, int64_t index) {
  const int64_t rows = outer * size;
#pragma omp parallel for schedule(static) if (worth(rows * inner))
  for (int64_t q = 0; q < rows; ++q) {
    float *d = dx + q * inner;
    if (q % size == index)
      std::memcpy(d, dy + (q / size) * inner, sizeof(float) * inner);
    else
      std::memset(d, 0, sizeof(float) * inner);
  }
}

void biasAdd(const float *x, const float *bias, float *out, int64_t rows,
             int64_t cols) {
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    float *o = out + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      o[c] = xr[c] + bias[c];
  }
}

void binary(Binary op, const float *a, const float *b, float *out, int64_t n) {
  switch (op) {
  case Binary::Add:
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
    for (int64_t i = 0; i < n; ++i)
      out[i] = a[i] + b[i];
    break;
  case Binary::Sub:
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
    for (int64_t i = 0; i < n; ++i)
      out[i] = a[i] - b[i];
    break;
  case Binary::Mul:
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
    for (int64_t i = 0; i < n; ++i)
      out[i] = a[i] * b[i];
    break;
  case Binary::Div:
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
    for (int64_t i = 0; i < n; ++i)
      out[i] = a[i] / b[i];
    break;
  }
}

void accumulate(float *dst, const float *src, int64_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    dst[i] += src[i];
}

void scale(const float *x, float *out, int64_t n, float factor) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = factor * x[i];
}

void gelu(const float *x, float *out, int64_t n) {
  forBlocks(n, [=](int64_t begin, int64_t end) {
#pragma omp simd simdlen(16)
    for (int64_t i = begin; i < end; ++i)
      out[i] = x[i] * normalCdf(x[i]);
  });
}

void geluGrad(const float *x, const float *dy, float *dx, int64_t n) {
  // gelu'(x) = Phi(x) + x * phi(x).
  forBlocks(n, [=](int64_t begin, int64_t end) {
#pragma omp simd simdlen(16)
    for (int64_t i = begin; i < end; ++i) {
      const float xi = x[i];
      dx[i] = dy[i] * std::fma(xi, normalPdf(xi), normalCdf(xi));
    }
  });
}

void tanhForward(const float *x, float *out, int64_t n) {
  // Only the NSP pooler uses tanh ([batch, hidden]): libm's scalar tanh.
#pragma omp parallel for schedule(static) if (worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = std::tanh(x[i]);
}

void tanhGrad(const float *y, const float *dy, float *dx, int64_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

void transpose(const float *x, float *out, int32_t rank, const int64_t *dims,
               const int64_t *perm) {
  int64_t total = 1;
  for (int32_t d = 0; d < rank; ++d)
    total *= dims[d];
  if (total <= 0)
    return;
  // Simplify: drop size-1 dimensions, then merge runs of output dimensions
  // that are consecutive input dimensions. Up to 6 dimensions remain.
  int64_t newIndex[6];
  int32_t kept = 0;
  for (int32_t d = 0; d < rank; ++d)
    newIndex[d] = dims[d] == 1 ? -1 : kept++;
  int64_t outOrder[6]; // output order of the kept input dimensions
  int32_t count = 0;
  for (int32_t i = 0; i < rank; ++i)
    if (newIndex[perm[i]] >= 0)
      outOrder[count++] = newIndex[perm[i]];
  int64_t keptDims[6];
  for (int32_t d = 0, j = 0; d < rank; ++d)
    if (dims[d] != 1)
      keptDims[j++] = dims[d];
  // Groups of output positions [groupStart[g], groupStart[g + 1]).
  int32_t groupStart[7];
  int32_t groups = 0;
  for (int32_t i = 0; i < count; ++i)
    if (i == 0 || outOrder[i] != outOrder[i - 1] + 1)
      groupStart[groups++] = i;
  groupStart[groups] = count;
  if (groups <= 1) {
    // The permutation keeps memory order.
#pragma omp parallel for simd schedule(static) if (parallel : worth(total))
    for (int64_t i = 0; i < total; ++i)
      out[i] = x[i];
    return;
  }
  // Group g covers input dimensions starting at first[g]; its rank among
  // groups in input order is its input dimension in the simplified problem.
  int64_t first[6], size[6];
  for (int32_t g = 0; g < groups; ++g) {
    first[g] = outOrder[groupStart[g]];
    size[g] = 1;
    for (int32_t i = groupStart[g]; i < groupStart[g + 1]; ++i)
      size[g] *= keptDims[outOrder[i]];
  }
  // inStride[g]: stride in x of output dimension g (groups in output order).
  int64_t inStride[6];
  for (int32_t g = 0; g < groups; ++g) {
    inStride[g] = 1;
    for (int32_t h = 0; h < groups; ++h)
      if (first[h] > first[g])
        inStride[g] *= size[h];
  }
  int64_t outStride[6];
  outStride[groups - 1] = 1;
  for (int32_t g = groups - 2; g >= 0; --g)
    outStride[g] = outStride[g + 1] * size[g + 1];
  const int32_t last = groups - 1;
  if (inStride[last] == 1) {
    // Output rows of size[last] elements are contiguous in x: copy rows.
    const int64_t rowLength = size[last];
    const int64_t rows = total / rowLength;
#pragma omp parallel for schedule(static) if (worth(total))
    for (int64_t q = 0; q < rows; ++q) {
      int64_t rest = q, offset = 0;
      for (int32_t g = last - 1; g >= 0; --g) {
        offset += (rest % size[g]) * inStride[g];
        rest /= size[g];
      }
      std::memcpy(out + q * rowLength, x + offset, sizeof(float) * rowLength);
    }
    return;
  }
  // Otherwise the output's last dimension is strided in x and x's last
  // dimension (stride 1) is output dimension `inner`: transpose 32 x 32
  // tiles of the (inner, last) plane for every index of the other
  // dimensions.
  int32_t inner = 0;
  for (int32_t g = 0; g < groups; ++g)
    if (inStride[g] == 1)
      inner = g;
  constexpr int64_t kTile = 32;
  const int64_t rowsI = size[inner], colsJ = size[last];
  const int64_t tilesI = (rowsI + kTile - 1) / kTile;
  const int64_t planes = total / (rowsI * colsJ);
  const int64_t strideJ = inStride[last], outStrideI = outStride[inner];
#pragma omp parallel for schedule(static) if (worth(total))
  for (int64_t item = 0; item < planes * tilesI; ++item) {
    int64_t rest = item / tilesI, inBase = 0, outBase = 0;
    for (int32_t g = last - 1; g >= 0; --g) {
      if (g == inner)
        continue;
      const int64_t index = rest % size[g];
      rest /= size[g];
      inBase += index * inStride[g];
      outBase += index * outStride[g];
    }
    const int64_t i0 = (item % tilesI) * kTile;
    const int64_t i1 = std::min(rowsI, i0 + kTile);
    for (int64_t j0 = 0; j0 < colsJ; j0 += kTile) {
      const int64_t j1 = std::min(colsJ, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        const float *src = x + inBase + i;
        float *dst = out + outBase + i * outStrideI;
        for (int64_t j = j0; j < j1; ++j)
          dst[j] = src[j * strideJ];
      }
    }
  }
}

void broadcast(const float *x, float *out, int64_t outer, int64_t size,
               int64_t inner) {
  const int64_t rows = outer * size;
#pragma omp parallel for schedule(static) if (worth(rows * inner))
  for (int64_t q = 0; q < rows; ++q)
    std::memcpy(out + q * inner, x + (q / size) * inner, sizeof(float) * inner);
}

// The family's typed bodies (dialects/rt/kernels/Elementwise.td).
void run(Context &, const kernels::AttentionMaskArgs &a) {
  attentionMask(a.mask.data, a.out.data, a.count, static_cast<float>(a.fill));
}
void run(Context &, const kernels::BiasAddArgs &a) {
  biasAdd(a.x.data, a.bias.data, a.out.data, a.rows, a.cols);
}
void run(Context &, const kernels::AddArgs &a) {
  binary(Binary::Add, a.a.data, a.b.data, a.out.data, a.count);
}
void run(Context &, const kernels::SubArgs &a) {
  binary(Binary::Sub, a.a.data, a.b.data, a.out.data, a.count);
}
void run(Context &, const kernels::MulArgs &a) {
  binary(Binary::Mul, a.a.data, a.b.data, a.out.data, a.count);
}
void run(Context &, const kernels::DivArgs &a) {
  binary(Binary::Div, a.a.data, a.b.data, a.out.data, a.count);
}
void run(Context &, const kernels::ScaleArgs &a) {
  scale(a.x.data, a.out.data, a.count, static_cast<float>(a.factor));
}
void run(Context &, const kernels::AccumulateArgs &a) {
  accumulate(a.dst.data, a.src.data, a.count);
}
void run(Context &, const kernels::GeluArgs &a) {
  gelu(a.x.data, a.out.data, a.count);
}
void run(Context &, const kernels::GeluGradArgs &a) {
  geluGrad(a.x.data, a.dy.data, a.dx.data, a.count);
}
void run(Context &, const kernels::TanhArgs &a) {
  tanhForward(a.x.data, a.out.data, a.count);
}
void run(Context &, const kernels::TanhGradArgs &a) {
  tanhGrad(a.y.data, a.dy.data, a.dx.data, a.count);
}

} // namespace ferry::cpu
