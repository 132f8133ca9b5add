// ValidationPatience and OutputNetwork best-validation, watching ObjectiveMetricName (loss:
// lower is better; a metric: higher). After each validation it returns the objective's
// progress (checkpoints keep it); a new best (strictly better; NaN never is) resets the count
// and, with best-validation, asks to keep the current network; ValidationPatience validations
// in a row without a new best ask to stop (never when ValidationPatience is Inf, i.e. < 1).
// Runs on every rank (all see the same values); the trainer keeps and restores the network.
#pragma once
#include <cstdint>
#include <memory>

#include "config/options.h"
#include "train/observer.h"

namespace dlt {

class ValidationPatience : public TrainingObserver {
 public:
  // resumed: the progress a resumed checkpoint carried (TrainPosition), or the default.
  ValidationPatience(Metric objective, int64_t patience, OutputNetwork output, ObjectiveProgress resumed = {});
  Requests on_validation(const IterationRecord& rec, const RunState&) override;

 private:
  Metric objective_;
  int64_t patience_;
  OutputNetwork output_;
  ObjectiveProgress progress_;
};

}  // namespace dlt
