// The subcommands of the `ferry` CLI; each lives in its own file and adds
// itself to the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace ferry::cli {

// Adds a subcommand; the returned function runs it after parsing and returns
// the process's exit code.
using Runner = std::function<int()>;

Runner addCompileCommand(CLI::App &app);
Runner addTrainCommand(CLI::App &app);
Runner addEvalCommand(CLI::App &app);
Runner addInspectCommand(CLI::App &app);
Runner addPlanCommand(CLI::App &app);
Runner addCacheCommand(CLI::App &app);
Runner addReportCommand(CLI::App &app);
Runner addTokenizeCommand(CLI::App &app);
Runner addSquadCommand(CLI::App &app);

} // namespace ferry::cli
