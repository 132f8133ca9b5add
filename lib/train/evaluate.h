// One pass of the network over the validation data (inference mode): loss, accuracy, for
// segmentation mean IoU, and the Metrics option's values from a confusion matrix (and, for
// auc, every image's scores, gathered from all ranks). In a data-parallel world each rank evaluates its share and the
// sums are all-reduced, so every rank gets the same result. Used by the trainer at ValidationFrequency and at the end
// (after restoring a kept best network).
#pragma once
#include "train/training_run.h"

namespace dlt {

// NaN values when the run has no validation data.
Evaluation evaluate(TrainingRun& run);

}  // namespace dlt
