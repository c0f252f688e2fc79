// `ferry eval CONFIG|FILE.fxe --checkpoint DIR_OR_FILE --data PATH
// [--samples N] [--set K=V]...`: the masked-LM accuracy and loss and the NSP
// accuracy and loss of a checkpoint on an evaluation set (MLPerf HDF5 or
// TFRecord), forward only, without dropout, samples in file order.
#include "tools/ferry/Commands.h"
#include "tools/ferry/RunApi.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ferry::cli {

Runner addEvalCommand(CLI::App &app) {
  auto opts = std::make_shared<EvalOptionsCli>();
  CLI::App *cmd = app.add_subcommand(
      "eval", "Evaluate a checkpoint: masked-LM accuracy and loss, NSP "
              "accuracy and loss on an MLPerf evaluation set.");
  addCompileFlags(cmd, opts->compile);
  addCompileOnlyFlag(cmd, opts->compile);
  cmd->add_option("input", opts->input,
                  "A config (configs/bert-large.yaml) or an executable "
                  "(model.fxe)")
      ->required();
  cmd->add_option("--checkpoint", opts->checkpoint,
                  "A safetensors file with Hugging Face names, a checkpoint "
                  "step directory, or a save directory (its latest)")
      ->required()
      ->type_name("DIR_OR_FILE");
  cmd->add_option("--data", opts->data,
                  "The evaluation set: an MLPerf HDF5 or TFRecord file, a "
                  "directory or a glob")
      ->required()
      ->type_name("PATH");
  cmd->add_option("--samples", opts->samples,
                  "Evaluate the first N samples (default: all)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--set", opts->overrides,
                  "Override a config key (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--json", opts->json,
                  "Also write the results as one JSON object to FILE")
      ->type_name("FILE.json");
  cmd->add_option("--outputs", opts->outputs,
                  "Also write the program's per-sample outputs over the "
                  "evaluated samples as safetensors (sequence_output [samples, "
                  "seq, hidden]: the encoder's last hidden states; compile "
                  "with model.eval_sequence_output=true)")
      ->type_name("FILE.safetensors");
  return [opts] { return runInModule(&RunApi::eval, *opts); };
}

} // namespace ferry::cli
