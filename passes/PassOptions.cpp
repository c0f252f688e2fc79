//===- PassOptions.cpp - command-line parsers of pass option types --------===//

#include "passes/PassOptions.h"

#include "runtime/ByteSize.h"

bool llvm::cl::parser<ferry::ByteBudget>::parse(Option &o, StringRef argName,
                                                StringRef arg,
                                                ferry::ByteBudget &value) {
  if (arg == "none") {
    value = std::nullopt;
    return false;
  }
  std::optional<uint64_t> bytes = ferry::parseByteSize(arg.str());
  if (!bytes || *bytes == 0)
    return o.error("'" + arg + "' is not a byte budget: give `none` "
                   "(unlimited) or a positive size such as 25165824 or 24MiB");
  value = bytes;
  return false;
}

void llvm::cl::parser<ferry::ByteBudget>::print(raw_ostream &os,
                                                const ferry::ByteBudget &value) {
  os << ferry::optionText(value);
}

void llvm::cl::parser<ferry::ByteBudget>::printOptionDiff(
    const Option &o, const ferry::ByteBudget &value, const OptVal &,
    size_t globalWidth) const {
  printOptionName(o, globalWidth);
  outs() << "= ";
  print(outs(), value);
  outs() << "\n";
}
