//===- CompilerModule.cpp - the compiler's entry points (CompilerApi.h) ---===//
//
// Built into libferry-compiler.so, which `ferry` opens on the first compile
// that misses the cache, and into programs that link the compiler whole
// (ferry-cudasim). Each entry point sets up its own MLIRContext, runs the
// pipeline with a CompileSession (dumps, timing, reproducers) and returns
// plain data; nothing MLIR crosses the boundary, and no exception does.
//
//===----------------------------------------------------------------------===//

#include "compiler/CompilerApi.h"

#include "compiler/CompileSession.h"
#include "compiler/GraphCompile.h"
#include "compiler/GraphSummary.h"
#include "compiler/Registration.h"

#include "ferry/Version.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <exception>

using namespace ferry;

namespace {

std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  registerFerryDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

std::vector<uint8_t> compile(const Config &config, const std::string &name,
                             const std::vector<std::string> &programs,
                             const CompileOptions &options, std::FILE *log) {
  try {
    std::unique_ptr<mlir::MLIRContext> context = makeContext();
    CompileSession session(options);
    std::vector<uint8_t> payload =
        compileExecutable(*context, config, name, programs, &session);
    if (payload.empty())
      session.reportReproducer(log);
    return payload;
  } catch (const std::exception &e) {
    if (log)
      std::fprintf(log, "ferry: error: %s\n", e.what());
    return {};
  } catch (...) {
    if (log)
      std::fprintf(log, "ferry: error: the compiler failed (an unknown "
                        "exception); this is a bug in ferry\n");
    return {};
  }
}

bool emit(const Config &config, const std::string &name,
          const std::string &stage, const CompileOptions &options,
          std::string &ir, std::string &summary, std::FILE *log) {
  try {
    std::unique_ptr<mlir::MLIRContext> context = makeContext();
    CompileSession session(options);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        compileGraph(*context, config, name, &session);
    if (!module ||
        mlir::failed(lowerGraph(*module, config, {"train_step", "eval_step"},
                                stage, &session))) {
      session.reportReproducer(log);
      return false;
    }
    llvm::raw_string_ostream stream(ir);
    module->print(stream);
    if (stage == "graph")
      summary = summarizeGraph(*module, config);
    return true;
  } catch (const std::exception &e) {
    if (log)
      std::fprintf(log, "ferry: error: %s\n", e.what());
    return false;
  } catch (...) {
    if (log)
      std::fprintf(log, "ferry: error: the compiler failed (an unknown "
                        "exception); this is a bug in ferry\n");
    return false;
  }
}

const CompilerApi kApi = {kCompilerApiVersion,
                          FERRY_VERSION " (" FERRY_GIT_HASH ")", sizeof(Config),
                          compile, emit};

} // namespace

extern "C" __attribute__((visibility("default"))) const CompilerApi *
ferry_compiler_api() {
  return &kApi;
}
