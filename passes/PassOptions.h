//===- PassOptions.h - types that pass options name -------------*- C++ -*-===//
//
// The command-line parsers of the types that options in Passes.td and the
// pipelines name (declared, without LLVM, in PipelineOptions.h).
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_PASSOPTIONS_H
#define FERRY_PASSES_PASSOPTIONS_H

#include "passes/PipelineOptions.h"

#include "llvm/Support/CommandLine.h"

namespace llvm::cl {
// Parses and prints ferry::ByteBudget for pass and pipeline options.
template <>
class parser<ferry::ByteBudget> : public basic_parser<ferry::ByteBudget> {
public:
  parser(Option &o) : basic_parser(o) {}
  bool parse(Option &o, StringRef argName, StringRef arg,
             ferry::ByteBudget &value);
  StringRef getValueName() const override { return "none|bytes"; }
  void printOptionDiff(const Option &o, const ferry::ByteBudget &value,
                       const OptVal &defaultValue, size_t globalWidth) const;
  // `none` or the byte count, so a printed pipeline replays exactly.
  static void print(raw_ostream &os, const ferry::ByteBudget &value);
};
} // namespace llvm::cl

#endif // FERRY_PASSES_PASSOPTIONS_H
