// Training-progress PNG like MATLAB's trainingOptions('Plots','training-progress'): accuracy on
// top, loss below, raw mini-batch values, their smoothed curve, validation points and epoch
// boundaries, the learning rate of every iteration over the loss panel, and under them the text of MATLAB's side panel
// (start, elapsed, epoch and iteration of total, learning rate, hardware, why training stopped). Drawn from the
// recorded series whenever the trainer asks (no window, no Python).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "train/draw/canvas.h"
#include "train/run_status.h"

namespace dlt {

// The text panel under the plots. Fields left at their defaults are not shown.
struct ProgressInfo {
  std::string start_time;       // "2026-11-03 14:02:11" (local time)
  double elapsed_seconds = -1;  // training time so far
  int64_t epoch = 0, max_epochs = 0;
  int64_t iteration = 0, max_iterations = 0, iterations_per_epoch = 0;
  double learn_rate = -1;  // the current base learning rate
  std::string hardware;    // e.g. the backend's name and the data-parallel workers
  std::optional<RunStatus> status;
  std::string stop_reason;  // why training stopped, or the error (not shown while running)
};

struct InfoLine {
  std::string label, value;
  bool wide = false;  // gets a whole row (long values); the others share rows two by two
};
// The panel's lines, in order: Start time, Elapsed time, Epoch, Iteration, Learning rate, then
// the wide Hardware and Status ("running", or status_phrase and the reason, e.g. "finished:
// <reason>", "stopped early: <reason>", "failed: <error>").
std::vector<InfoLine> progress_info_lines(const ProgressInfo& info);

struct ProgressSeries {
  std::vector<double> iteration;  // x of the mini-batch values
  // The headline metric (train/progress.h): its panel's label, and whether it is a percent
  // (accuracy: the panel spans 0..100) or a number scaled to its values (RMSE, F1).
  std::string metric_label = "Accuracy (%)";
  bool metric_percent = true;
  std::vector<double> minibatch_accuracy;  // the headline, one per iteration (may be empty)
  std::vector<double> minibatch_loss;      // one per iteration (may be empty)
  std::vector<double> learn_rate;          // the base learning rate, one per iteration (may be empty)
  // One entry per validation check, in order; a non-finite value breaks the dashed line, so
  // that only consecutive checks are joined.
  std::vector<double> val_iteration;  // x of the validation values
  std::vector<double> val_accuracy;   // percent
  std::vector<double> val_loss;
  // The Metrics option's other values (name, one per validation check, in [0, 1]), drawn in
  // the accuracy panel in percent, each in its own colour (kMetricColours).
  std::vector<std::pair<std::string, std::vector<double>>> val_metrics;
  std::vector<int64_t> epoch_start_iterations;  // first iteration of each epoch
  std::string title;
  std::string title_note;  // drawn after the title in kNoteColour (e.g. a warning); "" for none
  ProgressInfo info;
};

// Colours of the smoothed curves; the raw curves are the same colours mixed 60% toward white.
inline constexpr Rgb kAccuracyColour{0, 114, 189};
inline constexpr Rgb kLossColour{217, 83, 25};
inline constexpr Rgb kNoteColour{200, 0, 0};
// The learning rate, drawn over the loss panel on its own scale: 0 at the panel's bottom, the
// run's largest rate at 90% of its height (the legend gives the scale and the last rate).
inline constexpr Rgb kLearnRateColour{119, 172, 48};
// The validation metrics' lines, in Metrics order (none is kLearnRateColour).
inline constexpr Rgb kMetricColours[] = {{237, 177, 32}, {126, 47, 142}, {77, 190, 238}, {162, 20, 47}, {0, 140, 140}};
// The plots fill the top 700 pixels; the info panel is the strip below kInfoTop.
inline constexpr int kProgressWidth = 1000, kProgressHeight = 830, kInfoTop = 684;
inline constexpr double kSmoothingFactor = 0.6;

// Writes a kProgressWidth x kProgressHeight PNG to path + ".tmp", then renames it onto path;
// taller when the info panel's wide lines (the Status) wrap onto more rows: they are broken at
// spaces, never cut.
// The smoothed curve is smooth_ema with kSmoothingFactor, or with a larger factor (an average
// over about three pixels' worth of iterations) when there are many iterations per pixel.
// Non-finite values are skipped; series of unequal length are cut to the shorter one; the loss
// axis is clipped to a robust maximum so that a few exploding values do not flatten the curve.
// Throws Error naming the path when the file cannot be written.
void write_progress_png(const std::string& path, const ProgressSeries& s);

// Exponential moving average with TensorBoard-style bias correction (so the first output equals
// the first input). Non-finite inputs give NaN outputs and leave the average unchanged.
std::vector<double> smooth_ema(const std::vector<double>& values, double factor = kSmoothingFactor);

// Top of a loss axis: the largest finite value that is not an outlier (above both ten times the
// 99th percentile and twenty times the median). 1 when there are no finite values.
double robust_max(std::vector<double> values);

}  // namespace dlt
