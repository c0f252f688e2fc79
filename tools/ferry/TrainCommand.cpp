// `ferry train CONFIG|FILE.fxe [--set K=V]... [--data PATH|synthetic]
// [--steps N] [--init-checkpoint F] [--save DIR] [--resume DIR]
// [--metrics FILE.jsonl] [--tensorboard DIR] [--log-every N] [--profile]`:
// compiles the config (or loads a compiled executable), then trains on the
// CPU backend, printing a progress line every N updates, writing every
// update's metrics as JSON lines and TensorBoard events, evaluating and
// checkpointing as the config says. SIGINT/SIGTERM end the run after the
// current update, with a checkpoint when saving.
#include "tools/ferry/Commands.h"
#include "tools/ferry/RunApi.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ferry::cli {

Runner addTrainCommand(CLI::App &app) {
  auto opts = std::make_shared<TrainOptionsCli>();
  CLI::App *cmd = app.add_subcommand(
      "train", "Train a model config (compiled on the fly) or a compiled "
               "executable (FILE.fxe) on the CPU backend.");
  addCompileFlags(cmd, opts->compile);
  addCompileOnlyFlag(cmd, opts->compile);
  cmd->add_option("input", opts->input,
                  "A config (configs/bert-tiny.yaml) or an executable "
                  "(model.fxe)")
      ->required();
  cmd->add_option(
         "--set", opts->overrides,
         "Override a config key, e.g. --set training.optimizer.lr=1e-4 "
         "(repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--data", opts->data,
                  "Training data (data.path): an MLPerf HDF5 or TFRecord file, "
                  "a directory or a glob of them, or `synthetic` (seeded "
                  "random batches; data.synthetic_samples sets the pool)")
      ->type_name("PATH|synthetic");
  cmd->add_option("--steps", opts->steps,
                  "Optimizer updates of the whole run (default: "
                  "training.steps); a resumed run continues up to it")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--init-checkpoint", opts->initCheckpoint,
                  "Start from a safetensors file with Hugging Face "
                  "BertForPreTraining names (checkpoint.init); the optimizer "
                  "starts fresh")
      ->type_name("FILE");
  cmd->add_option("--save", opts->save,
                  "Write checkpoints to DIR/step-NNNNNNNN (every "
                  "checkpoint.every_steps, at the end, and on SIGINT/SIGTERM), "
                  "keeping the newest checkpoint.keep (checkpoint.save_dir)")
      ->type_name("DIR");
  cmd->add_flag("--save-initial", opts->saveInitial,
                "Also write the weights the run starts from (the "
                "initialisation, or --init-checkpoint's with new heads "
                "initialised) as DIR/step-00000000 before the first update");
  cmd->add_option("--resume", opts->resume,
                  "Continue from a save directory's latest checkpoint, or "
                  "from one step directory, exactly as if never stopped")
      ->type_name("DIR");
  cmd->add_option("--metrics", opts->metrics,
                  "Write each update's metrics as JSON lines to FILE "
                  "(appended to when resuming)")
      ->type_name("FILE.jsonl");
  cmd->add_option("--tensorboard", opts->tensorboard,
                  "Write each update's metrics as TensorBoard event files in "
                  "DIR (tensorboard --logdir DIR)")
      ->type_name("DIR");
  cmd->add_option("--log-every", opts->logEvery,
                  "Print a progress line every N updates (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--profile", opts->profile,
                "Time every kernel and print where the time went at the end");
  return [opts] { return runInModule(&RunApi::train, *opts); };
}

} // namespace ferry::cli
