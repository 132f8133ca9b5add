// Subcommand registration. Each command lives in cmd_<name>.cpp and registers itself in
// register_commands() (commands.cpp: the one list).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace dlt::app {

void register_commands(CLI::App& app);
// Runs the subcommand that was parsed; returns the exit code.
int run_selected(CLI::App& app);

// Each command adds its subcommand and returns the function that runs it.
using Runner = std::function<int()>;
Runner add_info(CLI::App& app);
Runner add_time(CLI::App& app);
Runner add_train(CLI::App& app);
Runner add_classify(CLI::App& app);
Runner add_predict(CLI::App& app);
Runner add_make_dataset(CLI::App& app);
Runner add_report(CLI::App& app);
Runner add_import(CLI::App& app);
Runner add_export(CLI::App& app);
Runner add_segment(CLI::App& app);

}  // namespace dlt::app
