// Trainer (trainer.h): a run is prepared (data, network, optimizer, loaders), then each
// iteration is one flat step read top to bottom, as Caffe's Solver::Step: next batch,
// forward, backward, [all-reduce], update, then Trainer::record validates when due and hands
// the step's record to the run's observers (observer.h; the list is observers/observers.cpp),
// whose requests (stop, keep the best network, warnings) it applies: it alone writes the run's
// state. When the run ends it restores the kept network, validates a last time, says why it
// ended and writes the final files; the observers then close theirs.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "build_config.h"
#include "data/batch_loader.h"
#include "dist/data_parallel.h"
#include "dist/join_world.h"
#include "net/network.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/checkpoint.h"
#include "train/device_batches.h"
#include "train/evaluate.h"
#include "train/execution.h"
#include "train/live_files.h"
#include "train/observers/observers.h"
#include "train/run_files.h"
#include "train/run_setup.h"
#include "train/step_graph.h"
#include "train/targets.h"
#include "train/training_run.h"
#include "util/error.h"
#include "util/log.h"
#include "util/stop_signals.h"
#include "util/timer.h"

namespace dlt {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

namespace {

class Trainer {
 public:
  Trainer(const Config& c, const TrainArgs& a) : cfg_(c), args_(a), run_(c, args_), o_(c.training) {}
  TrainResult run();

 private:
  TrainResult train();
  void prepare_step();
  void log_run_start();
  double learn_rate(int64_t iteration) const;
  void step(Batch& batch, const Batch* next, RunContext ctx, IterationRecord& rec);
  bool record(IterationRecord& rec);
  bool stop_requested_by_signal(int64_t iteration);
  void prepare_validation();
  void validate(IterationRecord& rec);
  bool population_statistics();
  void apply(const Requests& r);
  void finish(RunStatus status, StopReason why);
  void fail(const std::string& error);
  void end_observers();
  void prepare_step_graph();
  void graphed_step(Batch& on_device, const Batch* next, const RunContext& ctx, double lr);

  const Config& cfg_;
  TrainArgs args_;
  TrainingRun run_;  // what the observers share
  const TrainingOptions& o_;
  Observers observers_;
  bool started_ = false;   // every observer's on_start has run
  size_t ended_ = 0;       // observers whose on_end has run
  bool finished_ = false;  // finish() is done (a diverged run throws after it)
  ModelData best_;         // OutputNetwork best-validation: the kept weights
  bool have_best_ = false;
  std::unique_ptr<LearnRateSchedule> schedule_;   // the learning rate of every iteration
  std::unique_ptr<GradientBuckets> buckets_;      // the data-parallel gradient all-reduce
  std::unique_ptr<DeviceBatches> train_batches_;  // training batches, uploaded one ahead
  std::unique_ptr<StepGraph> graph_;              // CudaGraph: captured steps
  Tensor graph_images_, graph_labels_;            // the captured step's fixed inputs
  HeadlineMetric headline_;                       // the metric beside the loss (the network's task)
  int64_t images_trained_ = 0;
  double observer_seconds_ = 0;         // spent in validation and the observers while training
  std::optional<StopSignals> signals_;  // one process: SIGINT / SIGTERM stop after the iteration
};

TrainResult Trainer::run() {
  try {
    return train();
  } catch (const std::exception& e) {
    if (!finished_) fail(e.what());  // e.g. the plot says so, with the error
    throw;
  }
}

TrainResult Trainer::train() {
  run_.start_time = local_time_now();
  run_.comm = args_.comm ? args_.comm : std::make_shared<LocalCommunicator>();
  if (!args_.device)
    throw std::logic_error("train_network: TrainArgs::device is not set (train/execution.h's training_device)");
  run_.device = *args_.device;
  if (o_.threads > 0) cpu_set_threads(o_.threads);
  prepare_run(run_);
  headline_ = headline_metric(run_.net->task());
  prepare_step();
  log_run_start();

  TrainPosition& pos = run_.position;
  if (!args_.resume.empty()) {
    pos = load_checkpoint_from_rank0(*run_.comm, run_.device, args_.resume, *run_.net, *run_.optimizer, run_.history);
    log::info("resuming from {} at iteration {} (epoch {})", args_.resume, pos.iteration, pos.epoch + 1);
  }
  run_.iterations_per_epoch = run_.train_loader->batches_per_epoch();
  run_.max_iterations = run_.iterations_per_epoch * o_.max_epochs;
  run_.elapsed_before = pos.elapsed;
  schedule_ = make_learn_rate_schedule(o_);
  run_.learn_rate = learn_rate(std::min(pos.iteration, run_.max_iterations - 1));  // the next step's
  prepare_validation();
  if (run_.writes_files())
    run_.table =
        std::make_unique<ProgressTable>(o_.verbose, run_.has_validation, o_.verbose_layout, stdout, stderr, headline_);
  observers_ = make_observers(run_);
  for (auto& o : observers_) o->on_start(run_.info());
  started_ = true;

  run_.train_timer.reset();
  Batch host_batches[2];  // the current and the next mini-batch
  train_batches_ = std::make_unique<DeviceBatches>(run_.device);
  run_.validation_batches = std::make_unique<DeviceBatches>(run_.device);
  // One process: the first SIGINT or SIGTERM ends the run after its iteration, as an early stop
  // does. Several processes keep the default action (their launcher stops them all): they do
  // not agree on a common iteration, and ranks stopping at different ones would hang.
  if (run_.comm->size() == 1) signals_.emplace();
  bool stop = false;
  for (int64_t epoch = pos.epoch; epoch < o_.max_epochs && !stop; ++epoch) {
    run_.train_loader->start_epoch(epoch);
    Batch* batch = &host_batches[0];
    Batch* next = &host_batches[1];
    int64_t b = 0;  // batches of this epoch done (a resumed run skips those its checkpoint did)
    for (; b < pos.batch_in_epoch && run_.train_loader->next(*batch); ++b) {
    }
    bool have = run_.train_loader->next(*batch);
    if (have) normalize_targets(*run_.net, *batch);
    for (; !stop && have; std::swap(batch, next)) {
      have = run_.train_loader->next(*next);  // fetched ahead: its upload overlaps this step
      if (have) normalize_targets(*run_.net, *next);
      pos.epoch = epoch;
      pos.batch_in_epoch = ++b;
      const int64_t it = ++pos.iteration;
      run_.learn_rate = learn_rate(it - 1);  // it counts from 1
      IterationRecord rec;
      rec.epoch = epoch + 1;
      rec.iteration = it;
      rec.learn_rate = run_.learn_rate;
      step(*batch, have ? next : nullptr, RunContext{true, o_.seed, static_cast<uint64_t>(it)}, rec);
      stop = record(rec) || stop_requested_by_signal(it);
    }
    pos.batch_in_epoch = 0;
  }
  run_.train_images_per_second = 0;
  const double train_seconds = run_.train_timer.seconds() - observer_seconds_;
  if (train_seconds > 0) run_.train_images_per_second = static_cast<double>(images_trained_) / train_seconds;
  if (graph_) log::info("{}", graph_->summary());
  const bool by_signal = stop && run_.state.stop_reason().kind == StopKind::kSignal;
  if (stop) {
    finish(by_signal ? RunStatus::kInterrupted : RunStatus::kStoppedEarly, run_.state.stop_reason());
  } else {
    finish(RunStatus::kCompleted, StopReason{StopKind::kMaxEpochs, "MaxEpochs " + std::to_string(o_.max_epochs) +
                                                                       " reached " + after_iterations(pos.iteration)});
  }
  TrainResult r;
  r.status = to_string(run_.state.status());
  r.stop_reason = run_.state.stop_reason().message;
  r.model_path = (fs::path(args_.output_dir) / "model.bin").string();
  r.signal = by_signal ? signals_->received() : 0;
  r.validation_accuracy = run_.state.validation().accuracy;
  r.headline = headline_.name;
  r.validation_mean_iou = run_.state.validation().mean_iou;
  return r;
}

// The learning rate of iteration `iteration` (0-based, global): the one place the loop asks for it.
double Trainer::learn_rate(int64_t iteration) const {
  return o_.initial_learn_rate * schedule_->factor(iteration, run_.iterations_per_epoch);
}

// One training iteration: batch -> forward -> loss -> backward -> [all-reduce] -> optimizer
// step at rec.learn_rate; fills rec's mini-batch loss and accuracy (non-finite: the run
// diverged). A rank with an empty share (WorkerLoad 0) skips the compute but joins the
// collectives.
void Trainer::step(Batch& batch, const Batch* next, RunContext ctx, IterationRecord& rec) {
  Timer timer;
  const double lr = rec.learn_rate;
  // Data parallel: this rank's share w = n / N, known before forward (synchronized batch
  // norm uses it; no collective in one process). Backward starts the gradient buckets
  // (weighted by w, summed over ranks) as it completes them; finish() waits for all.
  // With OnBadImage skip a rank's share can shrink, so N is counted; otherwise it is the
  // loader's global batch size and costs no collective (no host wait before forward).
  GlobalShare share =
      global_share(*run_.comm, batch.size, cfg_.data.on_bad_image == OnBadImage::kSkip ? 0 : batch.global_size);
  if (run_.comm->size() > 1) {
    ctx.comm = run_.comm.get();
    ctx.weight = share.weight;
    ctx.global_images = share.images;
  }
  buckets_->begin(share.weight);
  double loss = 0;
  int64_t correct = 0, counted = 0;
  // The whole step is issued before the host waits for anything (the loss read at the end):
  // the next batch's upload and this batch's compute overlap on a GPU.
  if (batch.size > 0) {
    if (batch.size != run_.net->batch()) run_.net->set_batch(batch.size);
    Batch& on_device = train_batches_->take(batch);
    if (graph_) {
      graphed_step(on_device, next, ctx, lr);  // forward, backward and the update
    } else {
      if (next) train_batches_->stage(*next);
      run_.net->forward(on_device.images, ctx);
      run_.net->loss_and_backward_async(run_.net->float_targets() ? on_device.targets : on_device.labels, ctx, true);
    }
  } else {
    if (next) train_batches_->stage(*next);
    run_.net->run_empty_share(ctx);  // joins the collectives with zeros
  }
  if (!graph_ || batch.size == 0) {
    buckets_->finish();
    run_.optimizer->step(lr);  // a non-finite loss ends the run below; the updated weights are not kept
  }
  // The headline's sums (progress.h): classification, images right of images; per pixel,
  // pixels right of those not undefined; regression, the squared errors (in the responses'
  // units) of the values; multi-label, 2 TP of 2 TP + FP + FN (micro F1).
  double right = 0, of = 0;
  const std::string& task = headline_.name;
  if (batch.size > 0 && !run_.net->float_targets()) {
    loss = run_.net->read_loss(&correct, &counted);
    right = static_cast<double>(correct);
    of = static_cast<double>(counted);
  } else if (batch.size > 0) {
    const LossTotals t = run_.net->read_loss_totals();
    loss = t.loss_sum;
    if (task == "rmse") {
      RegressionSums sums;
      sums.add(*run_.net, run_.net->output(), batch);
      right = sums.squared;
      of = sums.values;
    } else {
      right = 2.0 * static_cast<double>(t.tp);
      of = right + static_cast<double>(t.fp + t.fn);
    }
  }
  GlobalTotals g = all_reduce_totals(*run_.comm, batch.size, loss, right, of);
  rec.minibatch_loss = g.loss;
  rec.minibatch_accuracy = g.counted <= 0      ? kNaN
                           : task == "rmse"    ? std::sqrt(g.correct / g.counted)
                           : headline_.percent ? 100.0 * g.correct / g.counted
                                               : g.correct / g.counted;
  if (std::isfinite(g.loss)) images_trained_ += static_cast<int64_t>(g.images);
  rec.images_per_second = g.images / timer.seconds();  // the step's, from its start to the loss read
}

// The step's record to the run: validation (when due) completes it and goes to every observer,
// the history keeps it, every observer sees it; after each phase their merged requests are
// applied (observer.h). Returns whether the run stops after this step; a diverged step ends
// the run and throws TrainingError.
bool Trainer::record(IterationRecord& rec) {
  Timer t;
  run_.state.start_iteration();
  const bool diverged = !std::isfinite(rec.minibatch_loss);
  const int64_t it = rec.iteration;
  if (!diverged && run_.has_validation &&
      (it == 1 || it % std::max<int64_t>(o_.validation_frequency, 1) == 0 || it == run_.max_iterations)) {
    validate(rec);
    apply(on_validation(observers_, rec, run_.state));
  }
  rec.seconds = run_.elapsed();
  run_.history.add(rec);
  if (diverged) {
    const std::string why = "the mini-batch loss is " + std::to_string(rec.minibatch_loss) + " at iteration " +
                            std::to_string(it) + " (epoch " + std::to_string(rec.epoch) + ")";
    finish(RunStatus::kDiverged, StopReason{StopKind::kDiverged, why});
    throw TrainingError("training diverged: " + why + "; lower training.InitialLearnRate or set GradientThreshold");
  }
  apply(on_iteration(observers_, rec, run_.state));
  observer_seconds_ += t.seconds();
  return run_.state.stopping();
}

// Whether a SIGINT or SIGTERM came (StopSignals): then the run stops after `iteration`, which
// its stop reason names.
bool Trainer::stop_requested_by_signal(int64_t iteration) {
  const int sig = signals_ ? signals_->received() : 0;
  if (sig == 0) return false;
  Requests r;
  r.stop =
      StopReason{StopKind::kSignal, std::string("stopped by ") + signal_name(sig) + " " + after_iterations(iteration)};
  run_.state.apply(r);
  return true;
}

// log.csv's metric columns (the Metrics option); auc needs every image's scores, which per
// pixel the evaluation does not keep.
void Trainer::prepare_validation() {
  std::vector<std::string> names;
  const std::string task = run_.net->task();
  for (Metric m : o_.metrics) {
    if (m == Metric::kAuc && run_.net->per_pixel())
      throw ConfigError(cfg_.path +
                        ": training.Metrics: auc is for classification networks (a segmentation run reports "
                        "accuracy, fscore, precision, recall and iou per pixel)");
    if (regression_metric(m) != (task == "regression"))
      throw ConfigError(cfg_.path + ": training.Metrics: " + metric_name(m) + " is not a metric of " + task +
                        (task == "regression" ? " (regression reports rmse, mae and mape)"
                         : task == "multilabel"
                             ? " (multi-label classification reports fscore, precision, recall and iou)"
                             : " (rmse, mae and mape are regression's)"));
    if (task == "multilabel" && (m == Metric::kAccuracy || m == Metric::kAuc))
      throw ConfigError(cfg_.path + ": training.Metrics: " + metric_name(m) +
                        " is not a metric of multi-label classification (it reports fscore, precision, recall "
                        "and iou)");
    names.push_back(metric_name(m));
  }
  run_.history.set_metric_columns(metric_columns(names, headline_.name));
  run_.history.set_headline(headline_);
}

// A pass over the validation data (evaluate.h; every rank) into rec and the run's state.
void Trainer::validate(IterationRecord& rec) {
  const Evaluation v = evaluate(run_);
  run_.net->set_batch(o_.mini_batch_size);
  if (!std::isnan(v.mean_iou))
    log::info("validation at iteration {}: pixel accuracy {:.2f}%, mean IoU {:.4f}", rec.iteration, v.accuracy,
              v.mean_iou);
  rec.validation_accuracy = v.accuracy;
  rec.validation_loss = v.loss;
  rec.validation_metrics = v.metrics;
  run_.state.set_validation(v, true);
}

// The observers' merged requests: the best network kept, ValidationPatience's count into the
// position (checkpoints carry it), warnings logged, then the rest into the run's state.
void Trainer::apply(const Requests& r) {
  if (r.objective) {
    run_.position.best_val_loss = r.objective->best_score;
    run_.position.patience_count = r.objective->since_best;
    if (r.keep_network) {
      best_ = run_.net->to_model_data();
      have_best_ = true;
      run_.state.keep_best(r.objective->best_iteration, r.objective->best_value);
    }
  }
  for (const auto& w : r.warnings) {
    if (run_.table) run_.table->clear_bar();
    log::warn("{}", w);
  }
  run_.state.apply(r);
}

// The end of a run that did not fail: a run with a model gets the kept best network back and a
// final validation (unless its last iteration validated in this process), and `why` says which network
// model.bin is; then the final files (rank 0), every observer's on_end and the reason logged.
void Trainer::finish(RunStatus status, StopReason why) {
  const auto& recs = run_.history.records();
  const int64_t last = recs.empty() ? 0 : recs.back().iteration;
  if (ended_with_model(status)) {
    if (have_best_) run_.net->load_weights(best_);
    const bool finalized = population_statistics();
    if (have_best_ || (run_.has_validation && (finalized || recs.empty() || std::isnan(recs.back().validation_loss) ||
                                               std::isnan(run_.state.validation().loss)))) {
      // (the last: a run resumed from its final checkpoint has validated nothing in this process)
      run_.state.set_validation(evaluate(run_), false);
    }
    char value[32];
    std::snprintf(value, sizeof value, "%.6g", run_.state.best_objective());
    why.message += have_best_ ? "; model.bin is the best-validation network, " +
                                    after_iterations(run_.state.best_iteration()) + " (validation " +
                                    metric_name(o_.objective_metric) + " " + value + ")"
                              : "; model.bin is the final network, " + after_iterations(last);
  } else {
    why.message += "; no model.bin";
  }
  run_.state.end(status, why);
  if (run_.table) {  // the table's closing rule, before the lines below (they start at the left)
    run_.table->clear_bar();
    run_.table->footer();
  }
  if (run_.writes_files()) {
    ModelData model;
    if (ended_with_model(status)) {
      model = run_.net->to_model_data();
      model.training_yaml = args_.config_text;
      model.metadata_json = std::string("{\"kind\":\"model\",\"status\":\"") + to_string(status) + "\"}";
    }
    write_run_files(run_.run_files(ended_with_model(status) ? &model : nullptr));
  }
  end_observers();
  finished_ = true;
  // A diverged run's TrainingError says it (the others' sentences: after_iterations).
  if (status != RunStatus::kDiverged) log::info("{}: {}", status_phrase(status), why.message);
}

// BatchNormalizationStatistics population (MATLAB's): the network that model.bin will hold gets
// its batch norms' TrainedMean and TrainedVariance from one more pass of the training data, in
// order and unaugmented, as training forwards (each batch normalized with its own statistics,
// as in training; every rank its share, the statistics of the global batch). Returns whether
// it ran (false: moving, or no batch norm).
bool Trainer::population_statistics() {
  if (o_.batch_normalization_statistics != BatchNormStatistics::kPopulation) return false;
  Network& net = *run_.net;
  if (!net.has_population_statistics()) return false;
  net.start_population_statistics();
  Timer t;
  LoaderOptions lo = loader_options(cfg_.data, o_, net.input_shape(), false);
  lo.rank = run_.comm->rank();
  lo.world_size = run_.comm->size();
  BatchLoader loader(run_.train_data, lo);
  DeviceBatches batches(run_.device);
  loader.start_epoch(0);
  Batch b;
  double images = 0;
  uint64_t it = static_cast<uint64_t>(run_.position.iteration);
  while (loader.next(b)) {
    RunContext ctx{true, o_.seed, ++it};
    ctx.population_statistics = true;
    const GlobalShare share =
        global_share(*run_.comm, b.size, cfg_.data.on_bad_image == OnBadImage::kSkip ? 0 : b.global_size);
    if (run_.comm->size() > 1) {
      ctx.comm = run_.comm.get();
      ctx.weight = share.weight;
      ctx.global_images = share.images;
    }
    if (b.size > 0) {
      if (b.size != net.batch()) net.set_batch(b.size);
      net.forward(batches.take(b).images, ctx);
    } else {
      net.run_empty_share_forward(ctx);
    }
    images += static_cast<double>(share.images);
  }
  net.finish_population_statistics();
  net.set_batch(o_.mini_batch_size);
  log::info("batch normalization statistics of {} training images ({:.1f} s; BatchNormalizationStatistics population)",
            static_cast<int64_t>(images), t.seconds());
  return true;
}

// A failed run: its state says why (the error), its plot says so (rank 0, once training has
// started; a failure to draw it is only a warning) and every observer not ended yet ends.
void Trainer::fail(const std::string& error) {
  run_.state.end(RunStatus::kFailed, StopReason{StopKind::kError, error});
  if (started_ && run_.writes_files() && o_.plots != Plots::kNone) {
    try {
      const auto& recs = run_.history.records();
      const IterationRecord* last = recs.empty() ? nullptr : &recs.back();
      write_progress_png(
          (fs::path(args_.output_dir) / "progress.png").string(),
          run_.plot_series(last ? last->epoch : 0, last ? last->iteration : 0, last ? last->learn_rate : -1));
    } catch (const std::exception& plot_error) {
      log::warn("{}", plot_error.what());
    }
  }
  end_observers();
}

// Each observer's on_end, once (after an error, those not ended yet).
void Trainer::end_observers() {
  while (ended_ < observers_.size()) observers_[ended_++]->on_end(run_.state);
}

// The step's machinery: the data-parallel gradient buckets (started by backward as it
// completes them) and, with CudaGraph, the captured step.
void Trainer::prepare_step() {
  buckets_ = std::make_unique<GradientBuckets>(*run_.comm, run_.net->flat_grads(),
                                               gradient_bucket_elements(run_.comm->kind(), o_.gradient_bucket_size_mb),
                                               o_.communication_timing);
  if (buckets_->count() > 0) run_.net->set_grads_ready_hook([this](int64_t offset) { buckets_->ready_from(offset); });
  prepare_step_graph();
}

// CudaGraph (docs/gpu.md "CUDA Graphs"): steps of the full batch size read fixed input
// buffers and the optimizer's per-step scalars from device memory, so that one captured
// graph can replay them; off, with the reason logged, where that cannot work.
void Trainer::prepare_step_graph() {
  if (!o_.cuda_graph) return;
  const std::string why = step_graph_blocker(*run_.net, run_.device, run_.comm->size());
  if (!why.empty()) {
    log::info("CUDA graph: off ({}); CudaGraph: true is ignored", why);
    return;
  }
  graph_ = std::make_unique<StepGraph>(run_.device);
  run_.optimizer->set_device_scalars(true);
  graph_images_ = Tensor(batch_shape(o_.mini_batch_size, run_.net->input_shape()), run_.device);
  const Shape& in = run_.net->input_shape();  // per pixel: (N, H, W) labels
  graph_labels_ = Tensor(run_.net->per_pixel() ? Shape{o_.mini_batch_size, in[0], in[1]} : Shape{o_.mini_batch_size},
                         run_.device, DType::kI32);
  log::info("CUDA graph: on (CudaGraph): steps of batch size {} are captured after warm-up and replayed",
            o_.mini_batch_size);
}

// One step through the StepGraph: the optimizer's scalars uploaded and the batch copied into
// the fixed inputs outside the graph, then the step issued (warm-up), captured or replayed.
void Trainer::graphed_step(Batch& on_device, const Batch* next, const RunContext& ctx, double lr) {
  run_.optimizer->prepare(lr);  // counts the step; its learning rates and Adam's corrections: one upload
  const bool fixed = on_device.size == graph_labels_.shape()[0];
  if (fixed) {
    Backend& be = backend_for(run_.device);
    be.copy(on_device.images, graph_images_);
    be.copy(on_device.labels, graph_labels_);
  }
  if (next) train_batches_->stage(*next);  // the slot not in use; overlaps the step
  const Tensor& x = fixed ? graph_images_ : on_device.images;
  const Tensor& y = fixed ? graph_labels_ : on_device.labels;
  auto issue = [&] {
    run_.net->forward(x, ctx);
    run_.net->loss_and_backward_async(y, ctx, true);
    buckets_->finish();  // (one process: no buckets)
    run_.optimizer->update();
  };
  if (fixed)
    graph_->run(on_device.size, issue);
  else
    graph_->run_uncaptured(issue);  // an epoch's last, smaller batch
  run_.net->set_loss_labels(y);     // a replay did not set them
}

// What the run trains on and with, logged once before the first step; run_.hardware for the plot.
void Trainer::log_run_start() {
  if (o_.execution_environment == ExecutionEnvironment::kAuto)
    log::info("ExecutionEnvironment auto: {}",
              run_.device.is_cpu() ? "no usable GPU, training on the CPU" : "training on GPU " + run_.device.str());
  run_.hardware = backend_for(run_.device).name();
  log::info("backend: {}", run_.hardware);
  if (!run_.device.is_cpu())  // what a first GPU run needs to know: the libraries actually loaded
    log::info("loaded: {}{}", cuda_library_versions(),
              run_.comm->kind() == "nccl" ? ", " + nccl_library_version() : std::string());
  if (run_.comm->size() > 1)
    run_.hardware += ", " + std::to_string(run_.comm->size()) + " workers (" + run_.comm->kind() + ")";
  if (run_.net->mixed_precision())
    log::info("Precision mixed: convolution and fullyConnected multiply in bfloat16 (float32 sums and weights)");
  const std::string task = run_.net->task();
  const std::string what =
      task == "regression"   ? " and " + std::to_string(run_.train_data.target_width()) + " responses each"
      : task == "multilabel" ? " with labels of " + std::to_string(run_.train_data.num_classes()) + " classes"
                             : " in " + std::to_string(run_.train_data.num_classes()) + " classes";
  log::info("training on {} with {} images{}{}; {} learnables", run_.device.str(), run_.train_data.size(), what,
            run_.has_validation ? ", validating on " + std::to_string(run_.validation_data.size()) : std::string(),
            run_.net->total_learnables());
  if (run_.comm->size() > 1)
    log::info("data parallel: {} workers ({}), global MiniBatchSize {}", run_.comm->size(), run_.comm->kind(),
              o_.mini_batch_size);
}

}  // namespace

TrainResult train_network(const Config& config, const TrainArgs& args) {
  Trainer t(config, args);
  return t.run();
}

}  // namespace dlt
