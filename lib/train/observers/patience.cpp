// ValidationPatience and OutputNetwork best-validation, watching ObjectiveMetricName (loss:
// lower is better; a metric: higher): after each validation, a new best is recorded in the
// run's position (checkpoints keep it) and resets the patience count, and with best-validation
// the weights are kept; ValidationPatience validations in a row without a new best stop the run
// (never with Inf). At the end the kept weights are restored and validated again. Runs on every
// rank (all see the same values).
#include <cmath>

#include "train/evaluate.h"
#include "train/observer.h"
#include "train/training_run.h"

namespace dlt {
namespace {

class ValidationPatience : public TrainingObserver {
 public:
  explicit ValidationPatience(TrainingRun& run) : run_(run) {}

  void complete(IterationRecord& rec) override {
    if (!run_.validated) return;
    const Metric objective = run_.options.objective_metric;
    const double value =
        objective == Metric::kLoss ? rec.validation_loss : validation_metric(rec, metric_name(objective));
    // TrainPosition::best_val_loss keeps the best as a number to minimise (checkpoints carry
    // it): the loss itself, or minus a metric for which higher is better. NaN is never a best.
    const double score = higher_is_better(objective) ? -value : value;
    TrainPosition& pos = run_.position;
    if (score < pos.best_val_loss) {
      pos.best_val_loss = score;
      pos.patience_count = 0;
      if (run_.options.output_network == OutputNetwork::kBestValidation) {
        best_ = run_.net->to_model_data();
        have_best_ = true;
        run_.best_iteration = rec.iteration;
        run_.best_objective = value;
      }
    } else if (++pos.patience_count >= run_.options.validation_patience && run_.options.validation_patience > 0) {
      stop_ = true;
    }
  }

  bool wants_stop(std::string* reason) override {
    if (stop_ && reason) *reason = "ValidationPatience";
    return stop_;
  }

  void on_end(const RunEnd& end) override {
    if (!have_best_ || (end.status != "completed" && end.status != "stopped-early")) return;
    run_.net->load_weights(best_);
    run_.validation = evaluate(run_);
  }

 private:
  TrainingRun& run_;
  bool stop_ = false;
  ModelData best_;  // the weights at the best ObjectiveMetricName value (best-validation)
  bool have_best_ = false;
};

}  // namespace

std::unique_ptr<TrainingObserver> make_validation_patience(TrainingRun& run) {
  return std::make_unique<ValidationPatience>(run);
}

}  // namespace dlt
