// ValidationPatience (patience.h): the objective's best, the count since, the stop's sentence.
#include "train/observers/patience.h"

#include <cmath>
#include <cstdio>

namespace dlt {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

ValidationPatience::ValidationPatience(Metric objective, int64_t patience, OutputNetwork output,
                                       ObjectiveProgress resumed)
    : objective_(objective), patience_(patience), output_(output), progress_(resumed) {}

Requests ValidationPatience::on_validation(const IterationRecord& rec, const RunState&) {
  const double value =
      objective_ == Metric::kLoss ? rec.validation_loss : validation_metric(rec, metric_name(objective_));
  const double score = higher_is_better(objective_) ? -value : value;  // to minimise
  Requests r;
  if (score < progress_.best_score) {  // false for NaN
    progress_.best_score = score;
    progress_.since_best = 0;
    progress_.best_value = value;
    progress_.best_iteration = rec.iteration;
    r.keep_network = output_ == OutputNetwork::kBestValidation;
  } else if (++progress_.since_best >= patience_ && patience_ > 0) {
    std::string best = "validation " + std::string(metric_name(objective_)) + " did not improve for " +
                       std::to_string(progress_.since_best) + " validations in a row (ValidationPatience " +
                       std::to_string(patience_) + ")";
    if (progress_.best_iteration > 0)
      best += "; its best, " + number(progress_.best_value) + ", came " + after_iterations(progress_.best_iteration);
    else if (progress_.best_score < 1e300)
      best += "; its best, " + number(higher_is_better(objective_) ? -progress_.best_score : progress_.best_score) +
              ", was before the resumed checkpoint";
    r.stop = StopReason{StopKind::kValidationPatience, best};
  }
  r.objective = progress_;
  return r;
}

}  // namespace dlt
