#include "train/run_files.h"

#include <cmath>
#include <filesystem>

#include "train/draw/plot.h"
#include "util/files.h"
#include "util/json.h"
#include "util/log.h"

namespace dlt {

namespace fs = std::filesystem;

std::string summary_json(const RunFiles& f) {
  const auto& recs = f.log->records();
  double mb_acc = recs.empty() ? NAN : recs.back().minibatch_accuracy;
  double mb_loss = recs.empty() ? NAN : recs.back().minibatch_loss;
  JsonWriter j;
  j.begin_object();
  j.field("status", std::string(to_string(f.status)));
  j.key("stop_reason").begin_object();
  j.field("kind", std::string(to_string(f.stop_reason.kind)));
  j.field("message", f.stop_reason.message);
  j.end_object();
  j.field("epochs", f.epochs);
  j.field("iterations", f.iterations);
  const std::string& headline = f.log->headline().name;  // accuracy, rmse or f1 (progress.h)
  if (!f.task.empty()) j.field("task", f.task);
  j.field("minibatch_" + headline, mb_acc);
  j.field("minibatch_loss", mb_loss);
  j.field("validation_" + headline, f.validation_accuracy);
  j.field("validation_loss", f.validation_loss);
  if (!std::isnan(f.validation_mean_iou)) j.field("validation_mean_iou", f.validation_mean_iou);
  if (!f.validation_metrics.empty()) {
    j.key("validation_metrics").begin_object();
    for (const auto& [name, value] : f.validation_metrics) j.field(name, value);
    j.end_object();
  }
  if (f.best_iteration > 0) {
    j.key("best_validation").begin_object();
    j.field("metric", f.objective_metric);
    j.field("value", f.best_objective);
    j.field("iteration", f.best_iteration);
    j.end_object();
  }
  j.field("total_learnables", f.total_learnables);
  j.field("memory_bytes", f.memory_bytes);
  j.field("wall_seconds", f.wall_seconds);
  j.field("train_images_per_second", f.train_images_per_second);
  j.field("train_images", f.train_images);
  j.field("validation_images", f.validation_images);
  j.field("skipped_images", f.skipped_images);
  j.field("device", f.device);
  j.field("precision", f.precision);
  j.field("peak_device_memory_bytes", f.peak_device_memory_bytes);
  j.field("seed", static_cast<int64_t>(f.seed));
  j.key("classes").begin_array();
  for (const auto& c : f.classes) j.value(c);
  j.end_array();
  j.field("model", f.model ? std::string("model.bin") : std::string());
  j.key("warnings").begin_array();
  for (const auto& w : f.warnings) j.value(w);
  j.end_array();
  j.end_object();
  return j.str() + "\n";
}

ProgressSeries progress_series(const IterationLog& log) {
  ProgressSeries s;
  const HeadlineMetric& h = log.headline();
  s.metric_label = h.percent ? h.heading + " (%)" : h.heading;
  s.metric_percent = h.percent;
  for (const auto& name : log.metric_columns()) s.val_metrics.push_back({name, {}});
  int64_t last_epoch = 0;
  for (const auto& r : log.records()) {
    s.iteration.push_back(static_cast<double>(r.iteration));
    s.minibatch_accuracy.push_back(r.minibatch_accuracy);
    s.minibatch_loss.push_back(r.minibatch_loss);
    s.learn_rate.push_back(r.learn_rate);
    // A check whose loss is NaN (diverging) is still a check: it breaks the validation line.
    if (!std::isnan(r.validation_loss) || !std::isnan(r.validation_accuracy)) {
      s.val_iteration.push_back(static_cast<double>(r.iteration));
      s.val_accuracy.push_back(r.validation_accuracy);
      s.val_loss.push_back(r.validation_loss);
      for (auto& [name, values] : s.val_metrics) values.push_back(validation_metric(r, name));
    }
    if (r.epoch != last_epoch) {
      s.epoch_start_iterations.push_back(r.iteration);
      last_epoch = r.epoch;
    }
  }
  return s;
}

void write_run_files(const RunFiles& f) {
  fs::path dir(f.dir);
  make_dirs(f.dir);
  if (f.model) save_model((dir / "model.bin").string(), *f.model);
  write_file_atomic((dir / "log.csv").string(), f.log->csv());
  write_file_atomic((dir / "config.yaml").string(), f.config_text);
  if (f.plot) {
    ProgressSeries s = progress_series(*f.log);
    s.title = std::string("Training progress (") + to_string(f.status) + ")";
    s.title_note = f.plot_note;
    s.info = f.progress_info;
    write_progress_png((dir / "progress.png").string(), s);
  }
  // The summary goes last: its presence means the run's other files are complete.
  write_file_atomic((dir / "summary.json").string(), summary_json(f));
  log::info("wrote {}", (dir / "summary.json").string());
}

}  // namespace dlt
