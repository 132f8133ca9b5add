// One run per output folder: a new (not resumed) training run refuses a folder that holds an
// earlier run's outputs, so log.csv, summary.json and the TensorBoard events never mix two
// runs; with --overwrite it removes them first. It judges only the files a run writes there
// (run_files.h, live_files.h, the TensorBoard observer); checkpoints (CheckpointPath) and
// anything else in the folder are left alone.
#pragma once
#include <string>
#include <vector>

#include "config/options.h"

namespace dlt {

// The earlier run's files in output_dir: model.bin, log.csv, summary.json, config.yaml,
// progress.png, and the TensorBoard event files (events.out.tfevents.*) in
// output_dir/tensorboard and, when this run writes TensorBoard there, in o.tensorboard_dir.
// Paths as found, in that order; empty for an absent or clean folder.
std::vector<std::string> earlier_run_outputs(const std::string& output_dir, const TrainingOptions& o);

// Called once per run before training starts (the single process, the local launcher, or a
// cluster's rank 0 — never a worker). Without overwrite, throws UsageError
// "DIR: holds an earlier run's outputs (model.bin, ..., N TensorBoard event files); ..."
// pointing to --output-dir, --resume and --overwrite; with overwrite, removes those files and
// logs what it removed. Throws Error naming a file it cannot remove.
void claim_output_folder(const std::string& output_dir, const TrainingOptions& o, bool overwrite);

}  // namespace dlt
