//===- CompileSession.cpp - IR dumps, timing and reproducers -------------===//

#include "compiler/CompileSession.h"

#include "ferry/Version.h"
#include "runtime/AtomicFile.h"
#include "runtime/executable/ExecutableFile.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace mlir;
using namespace ferry;

namespace {

class SessionInstrumentation : public PassInstrumentation {
public:
  explicit SessionInstrumentation(CompileSession &session) : session(session) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    session.afterPass(pass, op);
  }

private:
  CompileSession &session;
};

std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string printModule(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os, OpPrintingFlags().enableDebugInfo(false));
  return text;
}

} // namespace

CompileSession::CompileSession(CompileOptions options)
    : options_(std::move(options)) {
  if (options_.timing) {
    timing_ = std::make_unique<DefaultTimingManager>();
    timing_->setEnabled(true);
    rootScope_ = timing_->getRootScope();
  }
  if (!options_.dumpDir.empty()) {
    llvm::sys::fs::create_directories(options_.dumpDir);
    writeManifest();
  }
}

// The timing report prints when the manager goes, after every pass manager.
CompileSession::~CompileSession() {
  if (progress_)
    progress_->finish();
}

void CompileSession::instrument(PassManager &pm) {
  pm.addInstrumentation(std::make_unique<SessionInstrumentation>(*this));
  if (!progress_)
    progress_ = std::make_unique<Progress>("compile", 3.0, "pipelines");
  ++pipelines_;
  pipeline_ = &pm;
  passesDone_ = 0;
  if (timing_)
    pm.enableTiming(rootScope_);
  // A failing pass leaves its input IR and the pipeline behind.
  std::string path =
      options_.dumpDir.empty()
          ? llvm::formatv("/tmp/ferry-reproducer-{0}.mlir", ::getpid()).str()
          : options_.dumpDir + "/reproducer.mlir";
  if (reproducer_ != path)
    llvm::sys::fs::remove(path); // one from an earlier compile is not ours
  reproducer_ = path;
  pm.enableCrashReproducerGeneration(path);
}

void CompileSession::reportReproducer(std::FILE *log) const {
  if (reproducer_.empty() || !log || !llvm::sys::fs::exists(reproducer_))
    return;
  std::fprintf(log,
               "ferry: the failing pass's input IR and pipeline are in %s; "
               "replay with `ferry-opt --run-reproducer %s`\n",
               reproducer_.c_str(), reproducer_.c_str());
}

void CompileSession::discardReproducer() {
  if (reproducer_.empty())
    return;
  llvm::sys::fs::remove(reproducer_);
  reproducer_.clear();
}

void CompileSession::dumpStage(const std::string &name, ModuleOp module) {
  if (options_.dumpDir.empty())
    return;
  std::string file = llvm::formatv("{0:2}_{1}.mlir", counter_++, name).str();
  for (char &c : file)
    if (c == ' ')
      c = '0';
  std::string text = "// ferry IR dump " + file + ": " + name +
                     " (not a pass: the stage's output)\n" +
                     printModule(module) + "\n";
  (void)writeFileAtomically(options_.dumpDir + "/" + file, text);
  files_.push_back({file, name});
  writeManifest();
}

void CompileSession::afterPass(Pass *pass, Operation *op) {
  if (!isa<ModuleOp>(op))
    return; // nested passes print with their module's pass
  std::string argument = pass->getArgument().str();
  if (argument.empty())
    argument = pass->getName().str();
  if (progress_ && pipeline_ && op->getParentOp() == nullptr) {
    ++passesDone_;
    double passes = std::max<double>(static_cast<double>(pipeline_->size()), 1);
    progress_->update(pipelines_ - 1 + std::min(1.0, passesDone_ / passes),
                      "after " + argument);
  }
  if (!options_.printAfter.empty() && options_.printAfter == argument) {
    llvm::errs() << "// -----// IR after " << argument << " //----- //\n"
                 << printModule(op) << "\n";
  }
  if (options_.dumpDir.empty())
    return;
  std::string pipeline;
  llvm::raw_string_ostream os(pipeline);
  pass->printAsTextualPipeline(os);
  std::string file =
      llvm::formatv("{0:2}_{1}.mlir", counter_++, argument).str();
  for (char &c : file)
    if (c == ' ')
      c = '0';
  std::string text = "// ferry IR dump " + file + ": after pass " + argument +
                     "\n// pass with its options: " + pipeline + "\n" +
                     printModule(op) + "\n";
  (void)writeFileAtomically(options_.dumpDir + "/" + file, text);
  files_.push_back({file, pipeline});
  writeManifest();
}

void CompileSession::writeManifest() {
  std::string json = "{\n";
  json += "  \"ferry_version\": \"" FERRY_VERSION "\",\n";
  json += "  \"ferry_git_hash\": \"" FERRY_GIT_HASH "\",\n";
  json += "  \"llvm_version\": \"" LLVM_VERSION_STRING "\",\n";
  json +=
      "  \"executable_format\": " + std::to_string(kExecutableFormatVersion) +
      ",\n";
  json += "  \"config\": \"" + jsonEscape(options_.configPath) + "\",\n";
  json += "  \"cache_key\": \"" + jsonEscape(options_.cacheKey) + "\",\n";
  json += "  \"files\": [";
  for (size_t i = 0; i < files_.size(); ++i)
    json += std::string(i ? ",\n" : "\n") + "    {\"file\": \"" +
            files_[i].first + "\", \"pass\": \"" +
            jsonEscape(files_[i].second) + "\"}";
  json += files_.empty() ? "]\n}\n" : "\n  ]\n}\n";
  (void)writeFileAtomically(options_.dumpDir + "/manifest.json", json);
}
