// Validation: at the first iteration, every ValidationFrequency iterations and at the last, a
// pass over the validation data (evaluate.h) whose loss, accuracy and Metrics fill the
// iteration's record (and log.csv gets a column per metric); at the end, a final pass when the
// last iteration did not validate. Runs on every rank (the pass all-reduces) and first in the
// list, so the others see the filled record.
#include <algorithm>
#include <cmath>

#include "train/evaluate.h"
#include "train/observer.h"
#include "train/training_run.h"
#include "util/error.h"
#include "util/log.h"

namespace dlt {
namespace {

class Validation : public TrainingObserver {
 public:
  explicit Validation(TrainingRun& run) : run_(run) {}

  // log.csv's metric columns; auc needs every image's scores, which per pixel it does not keep.
  void on_start(const RunInfo& info) override {
    std::vector<std::string> names;
    for (Metric m : run_.options.metrics) {
      if (m == Metric::kAuc && info.segmentation)
        throw ConfigError(run_.config.path +
                          ": training.Metrics: auc is for classification networks (a segmentation run reports "
                          "accuracy, fscore, precision, recall and iou per pixel)");
      names.push_back(metric_name(m));
    }
    run_.history.set_metric_columns(metric_columns(names));
  }

  void complete(IterationRecord& rec) override {
    const TrainingOptions& o = run_.options;
    const int64_t it = rec.iteration;
    run_.validated = run_.has_validation &&
                     (it == 1 || it % std::max<int64_t>(o.validation_frequency, 1) == 0 || it == run_.max_iterations);
    if (!run_.validated) return;
    run_.validation = evaluate(run_);
    run_.net->set_batch(o.mini_batch_size);
    const Evaluation& v = run_.validation;
    if (!std::isnan(v.mean_iou))
      log::info("validation at iteration {}: pixel accuracy {:.2f}%, mean IoU {:.4f}", it, v.accuracy, v.mean_iou);
    rec.validation_accuracy = v.accuracy;
    rec.validation_loss = v.loss;
    rec.validation_metrics = v.metrics;
  }

  void on_end(const RunEnd& end) override {
    if (end.status != "completed" && end.status != "stopped-early") return;
    const auto& recs = run_.history.records();
    if (run_.has_validation && (recs.empty() || std::isnan(recs.back().validation_loss)))
      run_.validation = evaluate(run_);
  }

 private:
  TrainingRun& run_;
};

}  // namespace

std::unique_ptr<TrainingObserver> make_validation(TrainingRun& run) { return std::make_unique<Validation>(run); }

}  // namespace dlt
