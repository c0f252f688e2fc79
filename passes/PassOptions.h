//===- PassOptions.h - enum types of pass options ---------------*- C++ -*-===//
//
// Types that options in Passes.td name, shared with the code that reads
// them (passes/lowering/).
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_PASSOPTIONS_H
#define FERRY_PASSES_PASSOPTIONS_H

namespace ferry {

// How GEMMs round their inputs (training.precision): ferry-select-kernels'
// `matmul-precision`, and the precision flag of gemm calls (Kernels.def).
enum class MatmulPrecision { fp32 = 0, bf16 = 1, fp16 = 2 };

} // namespace ferry

#endif // FERRY_PASSES_PASSOPTIONS_H
