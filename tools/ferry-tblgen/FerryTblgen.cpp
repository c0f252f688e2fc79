// ferry-tblgen: ferry's own TableGen backends over the kernel records
// (dialects/rt/kernels/*.td, RtKernelBase.td says what a record holds).
//   -gen-rt-kernel-rows  runtime/executable/KernelRows.inc: one X-macro row
//                        per fact of each kernel, in index order, which
//                        runtime/executable/KernelTable.{h,cpp} expand into
//                        the enum, the signatures and the per-call checks
//   -gen-rt-kernel-args  runtime/executable/KernelArgs.h: one typed argument
//                        struct per kernel (GemmArgs{batch, m, ..., a, b,
//                        c}), its decoding from a call's positional
//                        operands, and the dispatch of every kernel but
//                        those the backends carry out themselves
//                        (`backendOwned`: the transfers)
//   -gen-rt-kernel-runs  runtime/executable/KernelRuns.inc: the declaration
//                        of each such kernel's run(), by family, that
//                        every backend implements (a missing body is a link
//                        error naming the kernel)
//   -gen-rt-kernel-docs  docs/kernels.md, the kernel reference
// Both outputs are committed, so that the runtime-only build and the GPU
// kit need no LLVM; the build regenerates them into build/generated-sources
// and a lit test (test/docs/generated-docs.test) says when they are stale.
//
// Hand-written rather than MLIR's backends: mlir-tblgen knows ops, not
// ferry's runtime table or its reference format. The records are checked
// here (indices 0..N-1 without gaps, names unique, optional and rest
// entries last, rules naming real buffers): an error points at the record.
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Main.h"
#include "llvm/TableGen/Record.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace llvm;

namespace {

enum Action { GenKernelRows, GenKernelArgs, GenKernelRuns, GenKernelDocs };

cl::opt<Action> action(
    cl::desc("Action to perform:"),
    cl::values(clEnumValN(GenKernelRows, "gen-rt-kernel-rows",
                          "The runtime's kernel table rows (KernelRows.inc)"),
               clEnumValN(GenKernelArgs, "gen-rt-kernel-args",
                          "Typed kernel arguments and their decoding "
                          "(KernelArgs.h)"),
               clEnumValN(GenKernelRuns, "gen-rt-kernel-runs",
                          "The run() declarations a backend implements "
                          "(KernelRuns.inc)"),
               clEnumValN(GenKernelDocs, "gen-rt-kernel-docs",
                          "The kernel reference (docs/kernels.md)")));

enum Arity { Required = 0, Optional = 1, Rest = 2 };

const Record *def(const Record *r, StringRef field) {
  return r->getValueAsDef(field);
}
int arityOf(const Record *entry) {
  return static_cast<int>(def(entry, "arity")->getValueAsInt("kind"));
}
std::vector<const Record *> list(const Record *r, StringRef field) {
  return r->getValueAsListOfDefs(field);
}

// The kernels in index order, checked.
std::vector<const Record *> kernels(const RecordKeeper &records) {
  std::vector<const Record *> all(
      records.getAllDerivedDefinitions("RtKernel").begin(),
      records.getAllDerivedDefinitions("RtKernel").end());
  std::sort(all.begin(), all.end(), [](const Record *a, const Record *b) {
    return a->getValueAsInt("kernelId") < b->getValueAsInt("kernelId");
  });
  std::set<std::string> names, enums;
  for (size_t i = 0; i < all.size(); ++i) {
    const Record *k = all[i];
    int64_t id = k->getValueAsInt("kernelId");
    if (id != static_cast<int64_t>(i))
      PrintFatalError(k->getLoc(), "kernel ids must be 0.." +
                                       Twine(all.size() - 1) +
                                       " without gaps or repeats; expected " +
                                       Twine(i) + " here, found " + Twine(id));
    if (!names.insert(k->getValueAsString("opName").str()).second)
      PrintFatalError(k->getLoc(),
                      "a second kernel named " + k->getValueAsString("opName"));
    if (!enums.insert(k->getValueAsString("kernelEnum").str()).second)
      PrintFatalError(k->getLoc(), "a second kernelEnum " +
                                       k->getValueAsString("kernelEnum"));
    // Names unique. The encoding is positional: optional entries trail,
    // one rest list at most (the last int; buffers may follow a rest
    // buffer list, whose length is what the others leave).
    std::set<std::string> seen;
    for (StringRef field : {"ints", "floats", "buffers"}) {
      bool optional = false, rest = false;
      for (const Record *e : list(k, field)) {
        StringRef name = e->getValueAsString("name");
        if (!seen.insert(name.str()).second)
          PrintFatalError(k->getLoc(),
                          "two parameters or buffers named " + name);
        if (field == "floats")
          continue;
        int arity = arityOf(e);
        if ((optional && arity != Optional) || (rest && arity == Rest) ||
            (rest && field == "ints"))
          PrintFatalError(k->getLoc(), field + " entry " + name +
                                           " cannot follow an optional or "
                                           "rest entry: the encoding is "
                                           "positional");
        optional |= arity == Optional;
        rest |= arity == Rest;
      }
    }
    std::set<std::string> buffers;
    for (const Record *b : list(k, "buffers"))
      buffers.insert(b->getValueAsString("name").str());
    auto needBuffer = [&](StringRef name, StringRef rule) {
      if (!buffers.count(name.str()))
        PrintFatalError(k->getLoc(),
                        rule + " names " + name + ", which is no buffer");
    };
    for (const Record *r : list(k, "accessIf"))
      needBuffer(r->getValueAsString("buffer"), "an accessIf rule");
    for (const Record *r : list(k, "bf16"))
      needBuffer(r->getValueAsString("buffer"), "a bf16 rule");
    for (const Record *r : list(k, "disjoint")) {
      needBuffer(r->getValueAsString("written"), "a disjoint rule");
      needBuffer(r->getValueAsString("other"), "a disjoint rule");
    }
  }
  return all;
}

// A C string literal of `text`.
std::string quoted(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

const char *const kMacros[] = {
    "FERRY_KERNEL(Enum, name, doc)",
    "FERRY_INT(Enum, name, doc)",
    "FERRY_INT_OPTIONAL(Enum, name, doc)",
    "FERRY_INT_REST(Enum, name, doc)",
    "FERRY_FLOAT(Enum, name, doc)",
    "FERRY_CHECK(Enum, condition, message)",
    "FERRY_BUFFER(Enum, name, role, type, elements, doc)",
    "FERRY_BUFFER_OPTIONAL(Enum, name, role, type, elements, doc)",
    "FERRY_BUFFER_REST(Enum, name, role, type, elements, doc)",
    "FERRY_ACCESS_IF(Enum, buffer, condition, role)",
    "FERRY_DISJOINT(Enum, written, other)",
    "FERRY_BF16(Enum, buffer, condition)",
};

StringRef macroName(StringRef signature) {
  return signature.substr(0, signature.find('('));
}

// The role and type enumerators of KernelTable.h (RtIn -> In, RtF32 -> F32).
StringRef enumerator(const Record *r) { return r->getName().drop_front(2); }

bool emitRows(raw_ostream &os, const RecordKeeper &records) {
  os << "// Generated by ferry-tblgen -gen-rt-kernel-rows from "
        "dialects/rt/kernels/*.td;\n// do not edit. The kernel table as "
        "X-macro rows, in index order:\n";
  for (const char *m : kMacros)
    os << "//   " << m << "\n";
  os << "// KernelTable.{h,cpp} define the macros they need; the rest "
        "default to nothing.\n";
  for (const char *m : kMacros) {
    StringRef name = macroName(m);
    os << "#ifndef " << name << "\n#define " << m << "\n#define " << name
       << "_DEFAULTED_\n#endif\n";
  }
  for (const Record *k : kernels(records)) {
    StringRef e = k->getValueAsString("kernelEnum");
    os << "\nFERRY_KERNEL(" << e << ", "
       << quoted(k->getValueAsString("opName")) << ", "
       << quoted(k->getValueAsString("doc")) << ")\n";
    for (const Record *i : list(k, "ints")) {
      static const char *const kind[] = {"FERRY_INT", "FERRY_INT_OPTIONAL",
                                         "FERRY_INT_REST"};
      os << kind[arityOf(i)] << "(" << e << ", " << i->getValueAsString("name")
         << ", " << quoted(i->getValueAsString("doc")) << ")\n";
    }
    for (const Record *f : list(k, "floats"))
      os << "FERRY_FLOAT(" << e << ", " << f->getValueAsString("name") << ", "
         << quoted(f->getValueAsString("doc")) << ")\n";
    for (const Record *c : list(k, "checks"))
      os << "FERRY_CHECK(" << e << ", " << c->getValueAsString("condition")
         << ", " << quoted(c->getValueAsString("message")) << ")\n";
    for (const Record *b : list(k, "buffers")) {
      static const char *const kind[] = {
          "FERRY_BUFFER", "FERRY_BUFFER_OPTIONAL", "FERRY_BUFFER_REST"};
      os << kind[arityOf(b)] << "(" << e << ", " << b->getValueAsString("name")
         << ", " << enumerator(def(b, "role")) << ", "
         << enumerator(def(b, "type")) << ", "
         << b->getValueAsString("elements") << ", "
         << quoted(b->getValueAsString("doc")) << ")\n";
    }
    for (const Record *r : list(k, "accessIf"))
      os << "FERRY_ACCESS_IF(" << e << ", " << r->getValueAsString("buffer")
         << ", " << r->getValueAsString("condition") << ", "
         << enumerator(def(r, "role")) << ")\n";
    for (const Record *r : list(k, "disjoint"))
      os << "FERRY_DISJOINT(" << e << ", " << r->getValueAsString("written")
         << ", " << r->getValueAsString("other") << ")\n";
    for (const Record *r : list(k, "bf16"))
      os << "FERRY_BF16(" << e << ", " << r->getValueAsString("buffer") << ", "
         << r->getValueAsString("condition") << ")\n";
  }
  os << "\n";
  for (const char *m : kMacros) {
    StringRef name = macroName(m);
    os << "#ifdef " << name << "_DEFAULTED_\n#undef " << name << "\n#undef "
       << name << "_DEFAULTED_\n#endif\n";
  }
  return false;
}

// A C++ comment of `text`, wrapped at 80 columns after `indent`.
void comment(raw_ostream &os, StringRef indent, StringRef text) {
  std::string line;
  auto flush = [&] {
    if (!line.empty())
      os << indent << "//" << line << "\n";
    line.clear();
  };
  SmallVector<StringRef> words;
  text.split(words, ' ', -1, false);
  for (StringRef w : words) {
    if (indent.size() + 2 + line.size() + 1 + w.size() > 80)
      flush();
    line += " " + w.str();
  }
  flush();
}

std::string cType(const Record *buffer, bool writable) {
  std::string element = def(buffer, "type")->getValueAsString("cType").str();
  return writable ? element : "const " + element;
}

// Whether the kernel may write `buffer` (its role, or an access rule).
bool writable(const Record *kernel, const Record *buffer) {
  if (def(buffer, "role")->getName() != "RtIn")
    return true;
  for (const Record *r : list(kernel, "accessIf"))
    if (r->getValueAsString("buffer") == buffer->getValueAsString("name"))
      return true;
  return false;
}

bool emitArgs(raw_ostream &os, const RecordKeeper &records) {
  std::vector<const Record *> all = kernels(records);
  os << R"(// Generated by ferry-tblgen -gen-rt-kernel-args from dialects/rt/kernels/*.td;
// do not edit. Each kernel's arguments as a typed struct, decoded from an
// instruction's positional operands in one place, for the backends'
// run(Context &, const XArgs &) bodies (llm.c's typed launchers). Plain C++17
// (nvcc and the simulator compile it), no LLVM.
#pragma once

#include "runtime/executable/KernelTable.h"

#include <cstddef>
#include <cstdint>

namespace ferry::kernels {

// One buffer of a call: its address, whether it holds bf16 values (2
// bytes an element; the kernel reads fp32 values from it and rounds what it
// writes) and the bytes of its range as the executable plans it. An
// optional buffer the call does not give has data == nullptr.
template <class T> struct Buffer {
  T *data = nullptr;
  bool bf16 = false;
  int64_t bytes = 0;
  explicit operator bool() const { return data != nullptr; }
};
// A rest list of buffers (all of one role and type).
template <class T> struct BufferList {
  char *const *data = nullptr;
  size_t size = 0;
  T *operator[](size_t i) const { return reinterpret_cast<T *>(data[i]); }
};
// A rest list of integers.
struct IntList {
  const int64_t *data = nullptr;
  size_t size = 0;
  int64_t operator[](size_t i) const { return data[i]; }
};
// An integer that changes every step (a dropout's sample offset, an
// optimizer's step): its value for this run, and its position among the
// call's integers, for a backend that reads it on the device (CUDA graphs).
struct StepInt {
  int64_t value = 0;
  uint32_t index = 0;
};

// What decoding reads of a call. `Call` provides:
//   int64_t integer(size_t k) const;   // 0 past the end (absent optional)
//   StepInt stepInteger(size_t k) const;
//   IntList integers(size_t first) const; // the integers from `first` on
//   size_t integerCount() const;
//   double real(size_t k) const;
//   char *buffer(size_t b) const;      // past the end: nullptr
//   char *const *buffers() const;
//   size_t bufferCount() const;
//   bool bf16(size_t b) const;
//   int64_t bufferBytes(size_t b) const; // past the end: 0
)";
  for (const Record *k : all) {
    StringRef e = k->getValueAsString("kernelEnum");
    os << "\n";
    comment(os, "",
            k->getValueAsString("opName").str() + ": " +
                k->getValueAsString("doc").str() + ".");
    os << "struct " << e << "Args {\n";
    for (const Record *i : list(k, "ints")) {
      comment(os, "  ", i->getValueAsString("doc"));
      StringRef name = i->getValueAsString("name");
      switch (arityOf(i)) {
      case Required:
        os << "  " << (i->getValueAsBit("perStep") ? "StepInt " : "int64_t ")
           << name << (i->getValueAsBit("perStep") ? ";\n" : " = 0;\n");
        break;
      case Optional:
        os << "  int64_t " << name << " = 0; // 0 when absent\n  bool has_"
           << name << " = false;\n";
        break;
      case Rest:
        os << "  IntList " << name << ";\n";
        break;
      }
    }
    for (const Record *f : list(k, "floats")) {
      comment(os, "  ", f->getValueAsString("doc"));
      os << "  double " << f->getValueAsString("name") << " = 0;\n";
    }
    for (const Record *b : list(k, "buffers")) {
      comment(os, "  ", b->getValueAsString("doc"));
      std::string type = cType(b, writable(k, b));
      os << "  " << (arityOf(b) == Rest ? "BufferList<" : "Buffer<") << type
         << "> " << b->getValueAsString("name") << ";\n";
    }
    os << "};\n";
  }

  // Decoding: positions to fields, in declaration order.
  os << "\n// Decoding, one function per kernel: the call's operands by "
        "position.\n";
  for (const Record *k : all) {
    StringRef e = k->getValueAsString("kernelEnum");
    os << "template <class Call> " << e << "Args decode" << e
       << "(const Call &call) {\n  " << e << "Args a;\n";
    size_t n = 0;
    for (const Record *i : list(k, "ints")) {
      StringRef name = i->getValueAsString("name");
      switch (arityOf(i)) {
      case Required:
        os << "  a." << name << " = call."
           << (i->getValueAsBit("perStep") ? "stepInteger(" : "integer(") << n
           << ");\n";
        break;
      case Optional:
        os << "  a.has_" << name << " = call.integerCount() > " << n
           << ";\n  a." << name << " = call.integer(" << n << ");\n";
        break;
      case Rest:
        os << "  a." << name << " = call.integers(" << n << ");\n";
        break;
      }
      ++n;
    }
    n = 0;
    for (const Record *f : list(k, "floats"))
      os << "  a." << f->getValueAsString("name") << " = call.real(" << n++
         << ");\n";
    std::vector<const Record *> buffers = list(k, "buffers");
    size_t fixed = 0;
    for (const Record *b : buffers)
      fixed += arityOf(b) != Rest;
    bool hasRest = fixed != buffers.size();
    if (hasRest)
      os << "  const size_t rest = call.bufferCount() > " << fixed
         << " ? call.bufferCount() - " << fixed << " : 0;\n";
    // A buffer's position: the fixed ones before it, plus the rest list's
    // length once past it.
    size_t before = 0;
    bool pastRest = false;
    for (const Record *b : buffers) {
      StringRef name = b->getValueAsString("name");
      std::string at =
          std::to_string(before) + (pastRest ? " + rest" : std::string());
      if (arityOf(b) == Rest) {
        os << "  a." << name << " = {call.buffers() + " << at << ", rest};\n";
        pastRest = true;
        continue;
      }
      os << "  a." << name << " = {reinterpret_cast<"
         << cType(b, writable(k, b)) << " *>(call.buffer(" << at
         << ")), call.bf16(" << at << "), call.bufferBytes(" << at << ")};\n";
      ++before;
    }
    os << "  return a;\n}\n";
  }

  // Dispatch of the kernels whose backends run typed arguments.
  os << "\n// Runs `call` as run(context, decodeX(call)) unless its kernel "
        "is one the\n// backend carries out itself (backendOwned): false "
        "for those.\n"
        "template <class Context, class Call>\n"
        "bool dispatchKernel(Context &context, Kernel kernel, const Call "
        "&call) {\n  switch (kernel) {\n";
  for (const Record *k : all)
    if (!k->getValueAsBit("backendOwned")) {
      StringRef e = k->getValueAsString("kernelEnum");
      os << "  case Kernel::" << e << ":\n    run(context, decode" << e
         << "(call));\n    return true;\n";
    }
  os << "  default:\n    return false;\n  }\n}\n";

  // The kernels each backend carries out in its own schedule.
  os << "\n// Whether the backend carries `kernel` out itself (its record says "
        "`backendOwned`:\n// the transfers), rather than a run() body.\n"
        "inline bool backendOwned(Kernel kernel) {\n  switch (kernel) {\n";
  for (const Record *k : all)
    if (k->getValueAsBit("backendOwned"))
      os << "  case Kernel::" << k->getValueAsString("kernelEnum") << ":\n";
  os << "    return true;\n  default:\n    return false;\n  }\n}\n\n"
        "} // namespace ferry::kernels\n";
  return false;
}

bool emitRuns(raw_ostream &os, const RecordKeeper &records) {
  os << "// Generated by ferry-tblgen -gen-rt-kernel-runs from "
        "dialects/rt/kernels/*.td;\n// do not edit. What a backend "
        "implements for each kernel but the ones it\n// carries out itself "
        "(backendOwned), in the file of the kernel's family:\n// included "
        "inside the backend's namespace, where `Context` names its\n// "
        "kernel context.\n";
  std::vector<const Record *> all = kernels(records);
  std::vector<std::string> families;
  for (const Record *k : all) {
    std::string f = k->getValueAsString("kernelFamily").str();
    if (!k->getValueAsBit("backendOwned") &&
        std::find(families.begin(), families.end(), f) == families.end())
      families.push_back(f);
  }
  for (const std::string &f : families) {
    os << "\n// " << f << "\n";
    for (const Record *k : all)
      if (!k->getValueAsBit("backendOwned") &&
          k->getValueAsString("kernelFamily") == f)
        os << "void run(Context &context, const kernels::"
           << k->getValueAsString("kernelEnum") << "Args &args);\n";
  }
  return false;
}

// Markdown table cells may not hold a bare '|'.
std::string cell(StringRef text) {
  std::string out;
  for (char c : text)
    out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

bool emitDocs(raw_ostream &os, const RecordKeeper &records) {
  os << "<!-- Generated by ferry-tblgen -gen-rt-kernel-docs from "
        "dialects/rt/kernels/*.td; do not edit. -->\n"
        "# Kernels\n\n"
        "Every kernel a ferry program calls, as its record in "
        "`dialects/rt/kernels/` declares it. Each is an op of the rt dialect "
        "(`rt.gemm`, ...: the buffers its `!rt.range` operands, the "
        "parameters its named attributes); the executable stores its index "
        "in this list (append-only). Buffers are byte ranges of the arena "
        "(or of host memory for `load`/`store`); "
        "*elements* is how many the buffer must hold, from the integer "
        "parameters, checked by both backends before every call (0: not "
        "checked there). Parameters are in order; optional ones may be left "
        "off the end. A buffer that may be stored as bf16 (2 bytes an element; "
        "training.bf16_activations, the call's bf16 mask) says when.\n";
  auto suffix = [](const Record *entry) {
    return def(entry, "arity")->getValueAsString("docSuffix");
  };
  for (const Record *k : kernels(records)) {
    os << "\n## `" << k->getValueAsString("opName") << "`\n\n"
       << k->getValueAsString("doc") << ".\n\n"
       << "| buffer | role | type | elements | meaning |\n"
       << "|---|---|---|---|---|\n";
    std::vector<const Record *> buffers = list(k, "buffers");
    for (const Record *b : buffers)
      os << "| `" << b->getValueAsString("name") << "`" << suffix(b) << " | "
         << def(b, "role")->getValueAsString("docName") << " | "
         << def(b, "type")->getValueAsString("docName") << " | `"
         << cell(b->getValueAsString("elements")) << "` | "
         << cell(b->getValueAsString("doc")) << " |\n";
    std::vector<const Record *> ints = list(k, "ints"),
                                floats = list(k, "floats");
    if (!ints.empty() || !floats.empty()) {
      os << "\n| parameter | kind | meaning |\n|---|---|---|\n";
      for (const Record *p : ints)
        os << "| `" << p->getValueAsString("name") << "`" << suffix(p)
           << " | int | " << cell(p->getValueAsString("doc")) << " |\n";
      for (const Record *p : floats)
        os << "| `" << p->getValueAsString("name") << "` | float | "
           << cell(p->getValueAsString("doc")) << " |\n";
    }
    for (const Record *r : list(k, "accessIf"))
      os << "\n`" << r->getValueAsString("buffer") << "` is "
         << def(r, "role")->getValueAsString("docName") << " when `"
         << r->getValueAsString("condition") << "`.\n";
    for (const Record *c : list(k, "checks"))
      os << "\nRequires `" << c->getValueAsString("condition")
         << "` (else: " << c->getValueAsString("message") << ").\n";
    // In buffer order.
    std::vector<const Record *> bf16 = list(k, "bf16");
    for (const Record *b : buffers)
      for (const Record *r : bf16)
        if (r->getValueAsString("buffer") == b->getValueAsString("name")) {
          StringRef condition = r->getValueAsString("condition");
          os << "\n`" << b->getValueAsString("name")
             << "` may be stored as bf16";
          if (condition != "true")
            os << " when `" << condition << "`";
          os << ".\n";
        }
    std::vector<const Record *> disjoint = list(k, "disjoint");
    if (!disjoint.empty()) {
      os << "\nMay not overlap (written, other):";
      for (const Record *r : disjoint)
        os << " `" << r->getValueAsString("written") << "`/`"
           << r->getValueAsString("other") << "`";
      os << ".\n";
    }
  }
  return false;
}

bool run(raw_ostream &os, const RecordKeeper &records) {
  switch (action) {
  case GenKernelRows:
    return emitRows(os, records);
  case GenKernelArgs:
    return emitArgs(os, records);
  case GenKernelRuns:
    return emitRuns(os, records);
  case GenKernelDocs:
    return emitDocs(os, records);
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::ParseCommandLineOptions(argc, argv);
  return TableGenMain(argv[0], &run);
}
