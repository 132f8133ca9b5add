// The run's files while it trains, so that it can be watched (MATLAB's live training-progress
// window): config.yaml as training starts and progress.png redrawn at each validation and at
// least every PlotIntervalSeconds (log.csv's rows: log_csv.h). Rank 0 only; write_run_files
// (run_files.h) writes the final versions when the run ends.
#pragma once
#include <cstdint>
#include <string>

#include "config/options.h"
#include "train/draw/plot.h"
#include "train/progress.h"
#include "util/timer.h"

namespace dlt {

class LiveFiles {
 public:
  // Creates dir and writes config.yaml (temporary name, then renamed); removes a summary.json
  // left by an earlier run there (its presence means a finished run). plot false: never draws.
  // Throws Error naming the file that cannot be written.
  LiveFiles(const std::string& dir, const std::string& config_text, bool plot, double plot_interval_seconds);
  // Whether to redraw now: plot_interval_seconds have passed since the last drawing, or a
  // validation check came (now or earlier) and at least kDrawGap times the last drawing's
  // time has passed, so that drawing (about 0.1 s) takes at most a tenth of the run however
  // often it validates. Call once per iteration.
  bool plot_due(bool validated);
  // Draws progress.png (temporary name, then renamed) and restarts the interval.
  void plot(const ProgressSeries& s);

  static constexpr double kDrawGap = 10;

 private:
  std::string dir_;
  bool plot_;
  double interval_;
  bool pending_ = false;     // a validation not drawn yet
  double draw_seconds_ = 0;  // the last drawing's time
  Timer since_plot_;
};

// The local time now as "YYYY-MM-DD hh:mm:ss".
std::string local_time_now();

}  // namespace dlt
