// LearningWatchdog (watchdog.h): two symptoms of a network that learns nothing, and the one
// warning line that names the likely causes.
#include "train/watchdog.h"

#include <cmath>
#include <cstdio>

namespace dlt {

LearningWatchdog::LearningWatchdog(int64_t num_classes, int64_t iterations_per_epoch, WatchdogContext context)
    : classes_(num_classes), per_epoch_(iterations_per_epoch), ctx_(std::move(context)) {}

std::optional<std::string> LearningWatchdog::observe(const IterationRecord& r) {
  if (warned_ || classes_ < 2 || r.iteration <= per_epoch_) return std::nullopt;
  const double chance_loss = std::log(static_cast<double>(classes_));
  char text[160];
  const bool near =
      std::isfinite(r.minibatch_loss) && std::fabs(r.minibatch_loss - chance_loss) <= kSpread * chance_loss;
  if (!near) {
    losses_.clear();
  } else {
    losses_.push_back(r.minibatch_loss);
    if (static_cast<int64_t>(losses_.size()) > kWindow) losses_.pop_front();
    double mean = 0;
    for (double l : losses_) mean += l / static_cast<double>(losses_.size());
    if (static_cast<int64_t>(losses_.size()) == kWindow && std::fabs(mean - chance_loss) <= kBand * chance_loss) {
      warned_ = true;
      std::snprintf(text, sizeof(text),
                    "the mini-batch loss has stayed at ln(%lld) = %.4f (chance for %lld classes; mean %.4f) for %lld "
                    "iterations after epoch 1",
                    static_cast<long long>(classes_), chance_loss, static_cast<long long>(classes_), mean,
                    static_cast<long long>(kWindow));
      return warning(text);
    }
  }
  if (!std::isnan(r.validation_accuracy)) {
    const double chance = 100.0 / static_cast<double>(classes_);
    if (r.validation_accuracy <= kChanceFactor * chance) {
      if (++chance_validations_ >= kValidations) {
        warned_ = true;
        std::snprintf(text, sizeof(text),
                      "the validation accuracy is %.2f%% (chance for %lld classes: %.2f%%) at %d checks in a row after "
                      "epoch 1",
                      r.validation_accuracy, static_cast<long long>(classes_), chance, kValidations);
        return warning(text);
      }
    } else {
      chance_validations_ = 0;
    }
  }
  return std::nullopt;
}

std::string LearningWatchdog::warning(const std::string& symptom) const {
  char lr[32];
  std::snprintf(lr, sizeof(lr), "%g", ctx_.initial_learn_rate);
  return "the network is not learning: " + symptom + ". Likely causes: the weights initializer (" + ctx_.initializers +
         "; networks written for MATLAB before R2019a, such as the R2016b CIFAR-10 network, need WeightsInitializer: "
         "narrow-normal), "
         "the learning rate (InitialLearnRate " +
         lr +
         ": try 10x lower or higher), or the input scale (imageInput "
         "Normalization " +
         ctx_.normalization + ")";
}

}  // namespace dlt
