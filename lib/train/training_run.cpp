// TrainingRun (training_run.h): what the observers are told at the start, and the plot's panel.
#include "train/training_run.h"

#include "train/live_files.h"

namespace dlt {

RunInfo TrainingRun::info() const {
  return RunInfo{config,         args.output_dir,  iterations_per_epoch, max_iterations,
                 has_validation, net->per_pixel(), net->classes(),       writes_files()};
}

ProgressInfo TrainingRun::progress_info(const std::string& status, int64_t epoch, int64_t iteration, double lr) const {
  ProgressInfo i;
  i.start_time = start_time;
  i.elapsed_seconds = elapsed();
  i.epoch = epoch;
  i.max_epochs = options.max_epochs;
  i.iteration = iteration;
  i.max_iterations = max_iterations;
  i.iterations_per_epoch = iterations_per_epoch;
  i.learn_rate = lr;
  i.hardware = hardware;
  i.status = status;
  i.stop_reason = stop_reason(status, options, iteration);
  return i;
}

}  // namespace dlt
