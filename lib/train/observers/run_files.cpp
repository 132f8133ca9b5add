// The run's final files (train/run_files.h) as an observer, rank 0: when the run ends
// (completed, stopped early or diverged) model.bin (not for a diverged run), log.csv,
// config.yaml, progress.png and summary.json, last. After the validation and best-network
// observers in the list, so the final validation is in run.validation.
#include "train/run_files.h"
#include "backend/backend.h"
#include "train/observer.h"
#include "train/training_run.h"

namespace dlt {
namespace {

class FinalFiles : public TrainingObserver {
 public:
  explicit FinalFiles(TrainingRun& run) : run_(run) {}

  void on_end(const RunEnd& end) override {
    if (end.status == "failed") return;
    const TrainingRun& r = run_;
    const auto& recs = r.history.records();
    const IterationRecord* last = recs.empty() ? nullptr : &recs.back();
    RunFiles files;
    files.dir = r.args.output_dir;
    files.status = end.status;
    files.config_text = r.args.config_text;
    files.log = &r.history;
    files.epochs = last ? last->epoch : 0;
    files.iterations = last ? last->iteration : 0;
    files.validation_accuracy = r.validation.accuracy;
    files.validation_loss = r.validation.loss;
    files.validation_mean_iou = r.validation.mean_iou;
    files.validation_metrics = r.validation.metrics;
    files.objective_metric = metric_name(r.options.objective_metric);
    files.best_objective = r.best_objective;
    files.best_iteration = r.best_iteration;
    files.total_learnables = r.net->total_learnables();
    files.memory_bytes = r.net->memory_bytes();
    files.wall_seconds = r.wall.seconds();
    files.train_images_per_second = r.train_images_per_second;
    files.classes = r.net->classes();
    files.train_images = r.train_data.size();
    files.validation_images = r.has_validation ? r.validation_data.size() : 0;
    files.skipped_images =
        r.train_loader->skipped_images() + (r.validation_loader ? r.validation_loader->skipped_images() : 0);
    files.device = r.device.str();
    files.precision = to_string(r.options.precision);
    files.peak_device_memory_bytes = static_cast<int64_t>(backend_for(r.device).peak_memory_bytes());
    files.seed = r.options.seed;
    files.warnings = r.warnings;
    files.plot = r.options.plots != Plots::kNone;
    files.plot_note = r.plot_note;
    files.progress_info =
        r.progress_info(end.status, last ? last->epoch : 0, files.iterations, last ? last->learn_rate : -1);
    ModelData model;
    if (end.status != "diverged") {
      model = r.net->to_model_data();
      model.training_yaml = r.args.config_text;
      model.metadata_json = "{\"kind\":\"model\",\"status\":\"" + end.status + "\"}";
      files.model = &model;
    }
    write_run_files(files);
  }

 private:
  TrainingRun& run_;
};

}  // namespace

std::unique_ptr<TrainingObserver> make_run_files(TrainingRun& run) { return std::make_unique<FinalFiles>(run); }

}  // namespace dlt
