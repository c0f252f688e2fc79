//===- CompileSession.h - what one compile records besides its result -*- C++
//-*-===//
//
// The debugging side of a compile, shared by every PassManager it runs:
// --dump-ir DIR (the IR after every pass in numbered files, each headed by
// the pass and its options, plus manifest.json), --print-ir-after=PASS,
// --timing (time per pass), and the reproducer a failing pass leaves (input
// IR + pipeline, replayed by `ferry-opt --run-reproducer FILE`). None of it
// changes the executable, so none of it is in the cache key.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_COMPILER_COMPILESESSION_H
#define FERRY_COMPILER_COMPILESESSION_H

#include "compiler/CompilerApi.h"
#include "runtime/Progress.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ferry {

class CompileSession {
public:
  explicit CompileSession(CompileOptions options);
  ~CompileSession();

  // Adds dumping, printing, timing and the reproducer to a pass manager.
  void instrument(mlir::PassManager &pm);
  // Writes the IR of a stage that is not a pass (the builder's output).
  void dumpStage(const std::string &name, mlir::ModuleOp module);
  // Called by the instrumentation after each pass.
  void afterPass(mlir::Pass *pass, mlir::Operation *op);
  // After a failed compile: says where the failing pass's reproducer is and
  // how to replay it, if one was written.
  void reportReproducer(std::FILE *log) const;
  // After a user error (passes/UserError.h): removes the reproducer the
  // failure wrote, since it records no bug, and reports nothing later.
  void discardReproducer();
  const CompileOptions &options() const { return options_; }

private:
  void writeManifest();

  CompileOptions options_;
  int counter_ = 0;
  std::vector<std::pair<std::string, std::string>> files_; // file, pass
  std::string reproducer_;
  std::unique_ptr<mlir::DefaultTimingManager> timing_;
  // A progress line for a long compile (runtime/Progress.h): the three
  // pipelines (graph clean-up, training, lowering), each by its passes.
  std::unique_ptr<Progress> progress_;
  // The pass manager last instrumented: its passes are added after
  // instrument() and counted when they run.
  mlir::PassManager *pipeline_ = nullptr;
  int pipelines_ = 0, passesDone_ = 0;
  mlir::TimingScope rootScope_; // destroyed before timing_ (member order)
};

} // namespace ferry

#endif // FERRY_COMPILER_COMPILESESSION_H
