// The learning watchdog: notices a run that learns nothing, i.e. the mini-batch loss pinned at
// ln(K) (a uniform softmax over K classes, chance) or the validation accuracy at chance, after
// the first epoch, and gives one warning line naming the likely causes. It never stops a run
// (MATLAB does not either); the trainer prints the line, records it in summary.json and marks
// the progress plot.
#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "train/progress.h"

namespace dlt {

// What the warning names as likely causes, from the run's config.
struct WatchdogContext {
  std::string initializers;  // e.g. "glorot (the default)" or "narrow-normal, he"
  double initial_learn_rate = 0;
  std::string normalization;  // the imageInput's Normalization
};

class LearningWatchdog {
 public:
  // The last kWindow mini-batch losses after the first epoch: their mean within kBand of
  // ln K, and each within kSpread of it (small mini-batches scatter by a few percent).
  static constexpr int64_t kWindow = 50;
  static constexpr double kBand = 0.01;
  static constexpr double kSpread = 0.05;
  // Consecutive validations after the first epoch at or below kChanceFactor * 100 / K percent.
  static constexpr int kValidations = 2;
  static constexpr double kChanceFactor = 1.1;

  LearningWatchdog(int64_t num_classes, int64_t iterations_per_epoch, WatchdogContext context);
  // Looks at one iteration (in order); returns the warning the first time a condition holds,
  // and nothing after that.
  std::optional<std::string> observe(const IterationRecord& r);

 private:
  std::string warning(const std::string& symptom) const;

  int64_t classes_, per_epoch_;
  WatchdogContext ctx_;
  std::deque<double> losses_;  // the last kWindow mini-batch losses after the first epoch
  int chance_validations_ = 0;
  bool warned_ = false;
};

}  // namespace dlt
