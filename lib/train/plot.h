// Training-progress PNG like MATLAB's trainingOptions('Plots','training-progress'): accuracy on
// top, loss below, raw mini-batch values, their smoothed curve, validation points and epoch
// boundaries. Written once from the recorded series (no live window, no Python).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "train/canvas.h"

namespace dlt {

struct ProgressSeries {
  std::vector<double> iteration;           // x of the mini-batch values
  std::vector<double> minibatch_accuracy;  // percent, one per iteration (may be empty)
  std::vector<double> minibatch_loss;      // one per iteration (may be empty)
  std::vector<double> val_iteration;       // x of the validation values
  std::vector<double> val_accuracy;        // percent
  std::vector<double> val_loss;
  std::vector<int64_t> epoch_start_iterations;  // first iteration of each epoch
  std::string title;
};

// Colours of the smoothed curves; the raw curves are the same colours mixed 60% toward white.
inline constexpr Rgb kAccuracyColour{0, 114, 189};
inline constexpr Rgb kLossColour{217, 83, 25};
inline constexpr int kProgressWidth = 1000, kProgressHeight = 700;
inline constexpr double kSmoothingFactor = 0.6;

// Writes a kProgressWidth x kProgressHeight PNG to path + ".tmp", then renames it onto path.
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
