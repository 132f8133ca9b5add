#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "backend/backend.h"
#include "backend/backend_options.h"
#include "backend/cpu/cpu_backend.h"
#include "build_config.h"
#include "data/batch_loader.h"
#include "data/datastore.h"
#include "data/label_images.h"
#include "dist/data_parallel.h"
#include "dist/join_world.h"
#include "net/model_file.h"
#include "net/network.h"
#include "onnx/transfer.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/checkpoint.h"
#include "train/class_weights.h"
#include "train/device_batches.h"
#include "train/execution.h"
#include "train/live_files.h"
#include "train/plot.h"
#include "train/progress.h"
#include "train/run_files.h"
#include "train/seg_metrics.h"
#include "train/step_graph.h"
#include "train/watchdog.h"
#include "util/error.h"
#include "util/files.h"
#include "util/log.h"
#include "util/timer.h"

namespace dlt {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

namespace {

struct Eval {
  double loss = kNaN, accuracy = kNaN;  // accuracy in percent (segmentation: pixel accuracy)
  double mean_iou = kNaN;               // segmentation: mean over classes of IoU (0..1)
};

class Trainer {
 public:
  Trainer(const Config& c, const TrainArgs& a) : cfg_(c), args_(a), o_(c.training) {}
  TrainResult run();

 private:
  TrainResult train();
  void prepare_data();
  void prepare_network();
  void log_run_start();
  bool step(Batch& batch, const Batch* next, RunContext ctx, double lr, IterationRecord& rec);
  bool validation_due(int64_t iteration, bool last) const;
  void update_live_files(const IterationRecord& rec, bool validated);
  void watch_learning(LearningWatchdog& watchdog, const IterationRecord& rec, ProgressTable& table);
  void prepare_step_graph();
  void graphed_step(Batch& on_device, const Batch* next, const RunContext& ctx, double lr);
  Eval evaluate();
  bool record_if_best(const Eval& val, TrainPosition& pos);
  bool out_of_patience(TrainPosition& pos) const;
  bool checkpoint_due(int64_t iteration, int64_t epoch, bool end_of_epoch) const;
  static TrainPosition resume_point(const TrainPosition& pos, int64_t epoch, int64_t batch, bool end_of_epoch,
                                    double elapsed);
  void checkpoint(const TrainPosition& pos);
  void start_live_files(const TrainPosition& pos);
  void draw_live_plot(int64_t epoch, int64_t iteration, double lr, const std::string& status = "running",
                      const std::string& reason = "");
  ProgressInfo progress_info(const std::string& status, int64_t epoch, int64_t iteration, double lr) const;
  double training_elapsed() const { return elapsed_before_ + train_timer_.seconds(); }
  void write_outputs(const std::string& status, const Eval& final_val, double wall);

  const Config& cfg_;
  TrainArgs args_;
  TrainingOptions o_;
  std::shared_ptr<Communicator> comm_;  // the data-parallel world (Local: one process)
  bool lead_ = true;                    // rank 0: prints, checkpoints, writes the outputs
  Device device_;
  ImageDatastore train_ds_, val_ds_;
  bool has_val_ = false;
  std::unique_ptr<Network> net_;
  std::unique_ptr<Optimizer> opt_;
  std::unique_ptr<GradientBuckets> buckets_;  // the data-parallel gradient all-reduce
  std::unique_ptr<BatchLoader> train_loader_, val_loader_;
  std::unique_ptr<DeviceBatches> train_batches_;  // training batches, uploaded one ahead
  std::unique_ptr<DeviceBatches> val_batches_;    // validation batches on the device
  std::unique_ptr<StepGraph> graph_;              // CudaGraph: captured steps
  Tensor graph_images_, graph_labels_;            // the captured step's fixed inputs
  IterationLog log_;
  std::unique_ptr<LiveFiles> live_;    // rank 0: the files to watch while training runs
  std::string start_time_, hardware_;  // for the progress plot's info panel
  int64_t per_epoch_ = 0, max_iterations_ = 0;
  std::unique_ptr<LearnRateSchedule> schedule_;  // the learning rate of every iteration
  Timer train_timer_;          // restarted when the training loop starts
  double elapsed_before_ = 0;  // training time before a resumed checkpoint
  int64_t images_trained_ = 0;
  double train_seconds_ = 0, val_seconds_ = 0, live_seconds_ = 0;  // live_seconds_: writing live files
  // For a learning watchdog: summary.json's "warnings" and the note next to the plot's title.
  std::vector<std::string> warnings_;
  std::string plot_note_;
  WatchdogContext watchdog_context();
  ModelData best_;
  bool have_best_ = false;
};

void Trainer::prepare_data() {
  const DataOptions& d = cfg_.data;
  if (d.train.empty()) throw ConfigError(cfg_.path + ": data.train is not set (a folder of class folders)");
  const bool pixels = d.segmentation();
  TrainValData data = load_train_val(d, o_.seed);
  train_ds_ = std::move(data.train);
  val_ds_ = std::move(data.validation);
  has_val_ = data.has_validation;
  if (pixels && train_ds_.num_classes() < 2)
    throw ConfigError(cfg_.path + ": data.ClassNames has one class; segmentation needs at least 2");
  if (train_ds_.num_classes() < 2)
    throw DataError(d.train + ": only one class folder ('" + train_ds_.classes().at(0) +
                    "'); classification needs at least 2 (one folder per class)");
  if (train_ds_.size() < o_.mini_batch_size)
    throw ConfigError("training.MiniBatchSize is " + std::to_string(o_.mini_batch_size) + " but " + d.train +
                      " has only " + std::to_string(train_ds_.size()) +
                      " training images (use a smaller MiniBatchSize)");
}

void Trainer::prepare_network() {
  net_ = std::make_unique<Network>(cfg_.network, device_);
  net_->classes() = train_ds_.classes();
  net_->label_ids() = cfg_.data.label_ids;
  const Layer& output = net_->layer(net_->size() - 1);
  if (net_->per_pixel() != cfg_.data.segmentation())
    throw ConfigError(output.spec().loc.prefix() + "layer '" + output.name() + "' is a" +
                      (net_->per_pixel() ? " per-pixel output but data.train is a folder of class folders (give "
                                           "train: {images: DIR, labels: DIR}, ClassNames and LabelIDs)"
                                         : "n image-level output but data.train has pixel labels (end the network "
                                           "in softmax + pixelClassification)"));
  if (net_->per_pixel()) {
    const Shape out = net_->output_shape(net_->size() - 1), in = net_->input_shape();
    if (out[0] != in[0] || out[1] != in[1])
      throw ConfigError(output.spec().loc.prefix() + "layer '" + output.name() + "' outputs " + out.str() +
                        " but the labels are " + std::to_string(in[0]) + "x" + std::to_string(in[1]) +
                        " (the input size); the network must restore the input's height and width");
    if (net_->num_classes() != train_ds_.num_classes())
      throw ConfigError(output.spec().loc.prefix() + "layer '" + output.name() + "' scores " +
                        std::to_string(net_->num_classes()) + " classes but data.ClassNames has " +
                        std::to_string(train_ds_.num_classes()) +
                        " (set NumClasses / NumFilters of the last "
                        "convolution to " +
                        std::to_string(train_ds_.num_classes()) + ")");
  }
  if (net_->num_classes() != train_ds_.num_classes()) {
    const Layer& fc = net_->layer(net_->size() - 3);
    throw ConfigError(fc.spec().loc.prefix() + "layer '" + fc.name() + "' outputs " +
                      std::to_string(net_->num_classes()) + " classes but " + cfg_.data.train + " has " +
                      std::to_string(train_ds_.num_classes()) +
                      " class folders (set OutputSize: " + std::to_string(train_ds_.num_classes()) + ")");
  }
  net_->init_params(o_.seed);
  if (cfg_.base.weights) apply_base_weights(*net_, *cfg_.base.weights);  // transfer: kept layers
  const Shape& in = net_->input_shape();
  // Each rank loads its own share of every global mini-batch (training and validation).
  LoaderOptions train_opt = loader_options(cfg_.data, o_, in, true), val_opt = loader_options(cfg_.data, o_, in, false);
  train_opt.rank = val_opt.rank = comm_->rank();
  train_opt.world_size = val_opt.world_size = comm_->size();
  train_loader_ = std::make_unique<BatchLoader>(train_ds_, train_opt);
  if (has_val_) val_loader_ = std::make_unique<BatchLoader>(val_ds_, val_opt);
  if (net_->input_layer().normalization() != "none") {
    Timer t;
    DatasetStats st = compute_stats(train_ds_, loader_options(cfg_.data, o_, in, false));
    int64_t c = in[2];
    Tensor mean(Shape{c}), sd(Shape{c});
    for (int64_t i = 0; i < c; ++i) {
      mean.data()[i] = static_cast<float>(st.channel_mean[i]);
      sd.data()[i] = static_cast<float>(st.channel_std[i]);
    }
    net_->input_layer().set_statistics(st.mean_image, mean, sd);
    log::info("input normalization '{}' from {} training images ({:.1f} s)", net_->input_layer().normalization(),
              st.count, t.seconds());
  }
  broadcast_model(*comm_, *net_);  // identical seeds already agree; rank 0's model wins
  opt_ = std::make_unique<Optimizer>(o_, net_->params());
  net_->set_mixed_precision(o_.precision == "mixed");
  net_->set_batch(o_.mini_batch_size);
  buckets_ = std::make_unique<GradientBuckets>(*comm_, net_->flat_grads(),
                                               gradient_bucket_elements(comm_->kind(), o_.gradient_bucket_size_mb),
                                               o_.communication_timing);
  if (buckets_->count() > 0) net_->set_grads_ready_hook([this](int64_t offset) { buckets_->ready_from(offset); });
  prepare_step_graph();
}

// One training iteration: batch -> forward -> loss -> backward -> [all-reduce] -> optimizer
// step. A rank with an empty share (WorkerLoad 0) skips the compute but joins the collectives.
bool Trainer::step(Batch& batch, const Batch* next, RunContext ctx, double lr, IterationRecord& rec) {
  // Data parallel: this rank's share w = n / N, known before forward (synchronized batch
  // norm uses it; no collective in one process). Backward starts the gradient buckets
  // (weighted by w, summed over ranks) as it completes them; finish() waits for all.
  // With OnBadImage skip a rank's share can shrink, so N is counted; otherwise it is the
  // loader's global batch size and costs no collective (no host wait before forward).
  GlobalShare share = global_share(*comm_, batch.size, cfg_.data.on_bad_image == "skip" ? 0 : batch.global_size);
  if (comm_->size() > 1) {
    ctx.comm = comm_.get();
    ctx.weight = share.weight;
    ctx.global_images = share.images;
  }
  buckets_->begin(share.weight);
  double loss = 0;
  int64_t correct = 0, counted = 0;
  // The whole step is issued before the host waits for anything (the loss read at the end):
  // the next batch's upload and this batch's compute overlap on a GPU.
  if (batch.size > 0) {
    if (batch.size != net_->batch()) net_->set_batch(batch.size);
    Batch& on_device = train_batches_->take(batch);
    if (graph_) {
      graphed_step(on_device, next, ctx, lr);  // forward, backward and the update
    } else {
      if (next) train_batches_->stage(*next);
      net_->forward(on_device.images, ctx);
      net_->loss_and_backward_async(on_device.labels, ctx, true);
    }
  } else {
    if (next) train_batches_->stage(*next);
    net_->run_empty_share(ctx);  // joins the collectives with zeros
  }
  if (!graph_ || batch.size == 0) {
    buckets_->finish();
    opt_->step(lr);  // a non-finite loss ends the run below; the updated weights are not kept
  }
  if (batch.size > 0) loss = net_->read_loss(&correct, &counted);
  GlobalTotals g = all_reduce_totals(*comm_, batch.size, loss, correct, counted);
  rec.minibatch_loss = g.loss;
  // Classification: images right; per pixel: pixels right among those not undefined.
  rec.minibatch_accuracy = g.counted > 0 ? 100.0 * g.correct / g.counted : kNaN;
  if (!std::isfinite(g.loss)) return false;
  images_trained_ += static_cast<int64_t>(g.images);
  return true;
}

// CudaGraph (docs/gpu.md "CUDA Graphs"): steps of the full batch size read fixed input
// buffers and the optimizer's per-step scalars from device memory, so that one captured
// graph can replay them; off, with the reason logged, where that cannot work.
void Trainer::prepare_step_graph() {
  if (!o_.cuda_graph) return;
  const std::string why = step_graph_blocker(*net_, device_, comm_->size());
  if (!why.empty()) {
    log::info("CUDA graph: off ({}); CudaGraph: true is ignored", why);
    return;
  }
  graph_ = std::make_unique<StepGraph>(device_);
  opt_->set_device_scalars(true);
  graph_images_ = Tensor(batch_shape(o_.mini_batch_size, net_->input_shape()), device_);
  const Shape& in = net_->input_shape();  // per pixel: (N, H, W) labels
  graph_labels_ = Tensor(net_->per_pixel() ? Shape{o_.mini_batch_size, in[0], in[1]} : Shape{o_.mini_batch_size},
                         device_, DType::kI32);
  log::info("CUDA graph: on (CudaGraph): steps of batch size {} are captured after warm-up and replayed",
            o_.mini_batch_size);
}

// One step through the StepGraph: the optimizer's scalars uploaded and the batch copied into
// the fixed inputs outside the graph, then the step issued (warm-up), captured or replayed.
void Trainer::graphed_step(Batch& on_device, const Batch* next, const RunContext& ctx, double lr) {
  opt_->prepare(lr);  // counts the step; its learning rates and Adam's corrections: one upload
  const bool fixed = on_device.size == graph_labels_.shape()[0];
  if (fixed) {
    Backend& be = backend_for(device_);
    be.copy(on_device.images, graph_images_);
    be.copy(on_device.labels, graph_labels_);
  }
  if (next) train_batches_->stage(*next);  // the slot not in use; overlaps the step
  const Tensor& x = fixed ? graph_images_ : on_device.images;
  const Tensor& y = fixed ? graph_labels_ : on_device.labels;
  auto issue = [&] {
    net_->forward(x, ctx);
    net_->loss_and_backward_async(y, ctx, true);
    buckets_->finish();  // (one process: no buckets)
    opt_->update();
  };
  if (fixed)
    graph_->run(on_device.size, issue);
  else
    graph_->run_uncaptured(issue);  // an epoch's last, smaller batch
  net_->set_loss_labels(y);         // a replay did not set them
}

Eval Trainer::evaluate() {
  Eval e;
  if (!val_loader_) return e;
  Timer timer;
  RunContext ctx;
  ctx.training = false;
  double loss_sum = 0;
  int64_t correct_sum = 0, count = 0, images = 0;
  const bool pixels = net_->per_pixel();
  SegmentationMetrics seg(pixels ? net_->classes() : std::vector<std::string>{});
  Image predicted;  // (N * H, W): each pixel's first class of maximal probability (argmax_classes)
  Batch b;
  val_loader_->start_epoch(0);
  while (val_loader_->next(b)) {
    if (b.size == 0) continue;
    if (b.size != net_->batch()) net_->set_batch(b.size);
    Batch& on_device = val_batches_->take(b);
    const Tensor& probs = net_->forward(on_device.images, ctx);
    if (pixels) {
      const Tensor host = probs.device().is_cpu() ? probs : probs.to(Device::cpu());  // a CPU output is not copied
      const Shape& in = net_->input_shape();
      argmax_classes(host.data(), static_cast<int>(b.size * in[0]), static_cast<int>(in[1]),
                     static_cast<int>(net_->num_classes()), predicted);
      seg.add_pixels(b.labels.data_i32(), predicted.pixels.data(), b.labels.numel());
    }
    int64_t correct = 0, counted = 0;
    loss_sum += net_->loss_and_backward(on_device.labels, ctx, false, &correct, &counted) * static_cast<double>(b.size);
    correct_sum += correct;
    count += counted;
    images += b.size;
  }
  std::vector<double> sums = {loss_sum, static_cast<double>(correct_sum), static_cast<double>(count),
                              static_cast<double>(images)};
  if (pixels) sums.insert(sums.end(), seg.raw().confusion.begin(), seg.raw().confusion.end());  // exact in double
  if (comm_->size() > 1) {  // each rank validated its share
    comm_->all_reduce_sum(sums.data(), sums.size());
    loss_sum = sums[0];
    correct_sum = static_cast<int64_t>(sums[1]);
    count = static_cast<int64_t>(sums[2]);
    images = static_cast<int64_t>(sums[3]);
    if (pixels) {
      SegmentationMetrics::Raw all;
      for (size_t i = 4; i < sums.size(); ++i) all.confusion.push_back(static_cast<int64_t>(sums[i]));
      all.bf_sum.assign(net_->classes().size(), 0);
      all.bf_images.assign(net_->classes().size(), 0);
      seg = SegmentationMetrics(net_->classes());
      seg.add_raw(all);
    }
  }
  if (count > 0) {
    e.loss = loss_sum / static_cast<double>(images);
    e.accuracy = 100.0 * static_cast<double>(correct_sum) / static_cast<double>(count);
  }
  if (pixels) e.mean_iou = seg.mean_iou();
  val_seconds_ += timer.seconds();
  return e;
}

// What the learning watchdog's warning names: the initializers of the layers with Weights,
// the learning rate and the input normalization, as this run has them.
WatchdogContext Trainer::watchdog_context() {
  WatchdogContext c;
  std::vector<std::string> inits;
  for (size_t i = 0; i < net_->size(); ++i) {
    Layer& l = net_->layer(i);
    bool has_weights = false;
    for (const auto& p : l.params()) has_weights = has_weights || p.name == "Weights";
    if (!has_weights) continue;
    std::string init = l.spec().has("WeightsInitializer") ? l.spec().get_string("WeightsInitializer", "glorot")
                                                          : "glorot (the default)";
    if (std::find(inits.begin(), inits.end(), init) == inits.end()) inits.push_back(init);
  }
  for (const auto& i : inits) c.initializers += (c.initializers.empty() ? "" : ", ") + i;
  if (c.initializers.empty()) c.initializers = "none";
  c.initial_learn_rate = o_.initial_learn_rate;
  c.normalization = net_->size() > 0 ? net_->layer(0).spec().get_string("Normalization", "zerocenter") : "none";
  return c;
}

// At the first iteration, every ValidationFrequency iterations and at the last.
bool Trainer::validation_due(int64_t iteration, bool last) const {
  return has_val_ && (iteration == 1 || iteration % std::max<int64_t>(o_.validation_frequency, 1) == 0 || last);
}

// A row per iteration in log.csv; progress.png at each validation and every PlotIntervalSeconds.
void Trainer::update_live_files(const IterationRecord& rec, bool validated) {
  if (!live_) return;
  Timer t;
  live_->append(rec);
  if (live_->plot_due(validated)) draw_live_plot(rec.epoch, rec.iteration, rec.learn_rate);
  live_seconds_ += t.seconds();
}

// The learning watchdog's warning, once: logged, kept for summary.json and noted on the plot.
// The run goes on, as in MATLAB.
void Trainer::watch_learning(LearningWatchdog& watchdog, const IterationRecord& rec, ProgressTable& table) {
  auto warning = watchdog.observe(rec);
  if (!warning || !lead_) return;
  table.clear_bar();
  log::warn("{}", *warning);
  warnings_.push_back(*warning);
  plot_note_ = "warning: not learning (summary.json)";
  draw_live_plot(rec.epoch, rec.iteration, rec.learn_rate);
}

// Best-model tracking after a validation: a new lowest validation loss is recorded in pos,
// resets the patience count and, with OutputNetwork best-validation-loss, keeps the weights.
// Returns whether the loss was a new best.
bool Trainer::record_if_best(const Eval& val, TrainPosition& pos) {
  if (!(val.loss < pos.best_val_loss)) return false;
  pos.best_val_loss = val.loss;
  pos.patience_count = 0;
  if (o_.output_network == "best-validation-loss") {
    best_ = net_->to_model_data();
    have_best_ = true;
  }
  return true;
}

// Early stop: counts a validation without a new best; true once ValidationPatience of them
// came in a row (never with ValidationPatience Inf).
bool Trainer::out_of_patience(TrainPosition& pos) const {
  return ++pos.patience_count >= o_.validation_patience && o_.validation_patience > 0;
}

// Whether a checkpoint is written after this iteration: every CheckpointFrequency iterations,
// or at the end of every CheckpointFrequency-th epoch (CheckpointFrequencyUnit); never
// without a CheckpointPath.
bool Trainer::checkpoint_due(int64_t iteration, int64_t epoch, bool end_of_epoch) const {
  if (o_.checkpoint_path.empty()) return false;
  const int64_t every = std::max<int64_t>(o_.checkpoint_frequency, 1);
  if (o_.checkpoint_frequency_unit == "iteration") return iteration % every == 0;
  return end_of_epoch && (epoch + 1) % every == 0;
}

// Where a run resumed from a checkpoint taken after `batch` batches of `epoch` goes on: the
// next epoch's start at an epoch's end, else the next batch of this one.
TrainPosition Trainer::resume_point(const TrainPosition& pos, int64_t epoch, int64_t batch, bool end_of_epoch,
                                    double elapsed) {
  TrainPosition cp = pos;
  cp.epoch = end_of_epoch ? epoch + 1 : epoch;
  cp.batch_in_epoch = end_of_epoch ? 0 : batch;
  cp.elapsed = elapsed;
  return cp;
}

void Trainer::checkpoint(const TrainPosition& pos) {
  if (!lead_) return;
  make_dirs(o_.checkpoint_path);
  std::string name = "checkpoint-iteration-" + std::to_string(pos.iteration) + ".bin";
  std::string path = (fs::path(o_.checkpoint_path) / name).string();
  save_checkpoint(path, *net_, *opt_, pos, log_, args_.config_text);
  // "latest.bin" is what --resume usually points at; written the same atomic way.
  save_checkpoint((fs::path(o_.checkpoint_path) / "latest.bin").string(), *net_, *opt_, pos, log_, args_.config_text);
  log::info("checkpoint: {}", path);
}

// config.yaml and log.csv (with a resumed run's rows) as training starts, and a first plot.
void Trainer::start_live_files(const TrainPosition& pos) {
  if (!lead_) return;
  live_ = std::make_unique<LiveFiles>(args_.output_dir, args_.config_text, log_, o_.plots != "none",
                                      o_.plot_interval_seconds);
  const int64_t epoch = std::min(pos.epoch, o_.max_epochs - 1);
  const int64_t next = std::min(pos.iteration, max_iterations_ - 1);  // 0-based: the next step's
  draw_live_plot(epoch + 1, pos.iteration, o_.initial_learn_rate * schedule_->factor(next, per_epoch_));
}

void Trainer::draw_live_plot(int64_t epoch, int64_t iteration, double lr, const std::string& status,
                             const std::string& reason) {
  if (!live_) return;
  ProgressSeries s = progress_series(log_);
  s.title = "Training progress (" + status + ")";
  s.title_note = plot_note_;
  s.info = progress_info(status, epoch, iteration, lr);
  if (!reason.empty()) s.info.stop_reason = reason;
  live_->plot(s);
}

ProgressInfo Trainer::progress_info(const std::string& status, int64_t epoch, int64_t iteration, double lr) const {
  ProgressInfo i;
  i.start_time = start_time_;
  i.elapsed_seconds = training_elapsed();
  i.epoch = epoch;
  i.max_epochs = o_.max_epochs;
  i.iteration = iteration;
  i.max_iterations = max_iterations_;
  i.iterations_per_epoch = per_epoch_;
  i.learn_rate = lr;
  i.hardware = hardware_;
  i.status = status;
  i.stop_reason = stop_reason(status, o_, iteration);
  return i;
}

// A run that fails after its live files started leaves a plot that says so, with the error.
TrainResult Trainer::run() {
  try {
    return train();
  } catch (const std::exception& e) {
    if (live_) {
      const auto& recs = log_.records();
      try {
        draw_live_plot(recs.empty() ? 0 : recs.back().epoch, recs.empty() ? 0 : recs.back().iteration,
                       recs.empty() ? -1 : recs.back().learn_rate, "failed", e.what());
      } catch (const std::exception& plot_error) {
        log::warn("{}", plot_error.what());
      }
    }
    throw;
  }
}

// What the run trains on and with, logged once before the first step; hardware_ for the plot.
void Trainer::log_run_start() {
  if (o_.execution_environment == "auto")
    log::info("ExecutionEnvironment auto: {}",
              device_.is_cpu() ? "no usable GPU, training on the CPU" : "training on GPU " + device_.str());
  hardware_ = backend_for(device_).name();
  log::info("backend: {}", hardware_);
  if (!device_.is_cpu())  // what a first GPU run needs to know: the libraries actually loaded
    log::info("loaded: {}{}", cuda_library_versions(),
              comm_->kind() == "nccl" ? ", " + nccl_library_version() : std::string());
  if (comm_->size() > 1) hardware_ += ", " + std::to_string(comm_->size()) + " workers (" + comm_->kind() + ")";
  if (net_->mixed_precision())
    log::info("Precision mixed: convolution and fullyConnected multiply in bfloat16 (float32 sums and weights)");
  log::info("training on {} with {} images in {} classes{}; {} learnables", device_.str(), train_ds_.size(),
            train_ds_.num_classes(), has_val_ ? ", validating on " + std::to_string(val_ds_.size()) : std::string(),
            net_->total_learnables());
  if (comm_->size() > 1)
    log::info("data parallel: {} workers ({}), global MiniBatchSize {}", comm_->size(), comm_->kind(),
              o_.mini_batch_size);
}

TrainResult Trainer::train() {
  Timer wall;
  start_time_ = local_time_now();
  comm_ = args_.comm ? args_.comm : std::make_shared<LocalCommunicator>();
  lead_ = comm_->rank() == 0;
  set_backend_options(backend_options_for(o_));
  device_ = resolve_device(o_);
  if (o_.threads > 0) cpu_set_threads(o_.threads);
  prepare_data();
  prepare_network();
  log_run_start();

  TrainPosition pos;
  if (!args_.resume.empty()) {
    pos = load_checkpoint_from_rank0(*comm_, device_, args_.resume, *net_, *opt_, log_);
    log::info("resuming from {} at iteration {} (epoch {})", args_.resume, pos.iteration, pos.epoch + 1);
  }
  const int64_t per_epoch = train_loader_->batches_per_epoch();
  const int64_t total_iterations = per_epoch * o_.max_epochs;
  per_epoch_ = per_epoch;
  schedule_ = make_learn_rate_schedule(o_);
  max_iterations_ = total_iterations;
  elapsed_before_ = pos.elapsed;
  start_live_files(pos);
  ProgressTable table(o_.verbose && lead_, has_val_, o_.verbose_layout);
  table.header();
  LearningWatchdog watchdog(static_cast<int64_t>(train_ds_.num_classes()), per_epoch, watchdog_context());
  std::string status = "completed";
  Eval last_val;
  train_timer_.reset();
  Batch host_batches[2];  // the current and the next mini-batch
  train_batches_ = std::make_unique<DeviceBatches>(device_);
  val_batches_ = std::make_unique<DeviceBatches>(device_);
  bool stop = false;
  for (int64_t epoch = pos.epoch; epoch < o_.max_epochs && !stop; ++epoch) {
    train_loader_->start_epoch(epoch);
    Batch* batch = &host_batches[0];
    Batch* next = &host_batches[1];
    int64_t b = 0;
    for (; b < pos.batch_in_epoch && train_loader_->next(*batch); ++b) {
    }
    pos.batch_in_epoch = 0;
    bool have = train_loader_->next(*batch);
    for (; !stop && have; std::swap(batch, next)) {
      have = train_loader_->next(*next);  // fetched ahead: its upload overlaps this step
      ++b;
      int64_t it = ++pos.iteration;
      const double lr = o_.initial_learn_rate * schedule_->factor(it - 1, per_epoch);  // it counts from 1
      RunContext ctx{true, o_.seed, static_cast<uint64_t>(it)};
      IterationRecord rec;
      rec.epoch = epoch + 1;
      rec.iteration = it;
      rec.learn_rate = lr;
      if (!step(*batch, have ? next : nullptr, ctx, lr, rec)) {
        table.footer();
        status = "diverged";
        rec.seconds = training_elapsed();
        log_.add(rec);
        if (live_) live_->append(rec);
        write_outputs(status, last_val, wall.seconds());
        throw TrainingError("training diverged: the mini-batch loss is " + std::to_string(rec.minibatch_loss) +
                            " at iteration " + std::to_string(it) + " (epoch " + std::to_string(epoch + 1) +
                            "); lower training.InitialLearnRate or set GradientThreshold");
      }
      const bool last = it == total_iterations;
      const bool validate = validation_due(it, last);
      if (validate) {
        last_val = evaluate();
        net_->set_batch(o_.mini_batch_size);
        if (!std::isnan(last_val.mean_iou))
          log::info("validation at iteration {}: pixel accuracy {:.2f}%, mean IoU {:.4f}", it, last_val.accuracy,
                    last_val.mean_iou);
        rec.validation_accuracy = last_val.accuracy;
        rec.validation_loss = last_val.loss;
        if (!record_if_best(last_val, pos) && out_of_patience(pos)) {
          status = "stopped-early";
          stop = true;
        }
      }
      rec.seconds = training_elapsed();
      log_.add(rec);
      update_live_files(rec, validate);
      watch_learning(watchdog, rec, table);
      if (it == 1 || it % std::max<int64_t>(o_.verbose_frequency, 1) == 0 || validate || last || stop) table.row(rec);
      if (lead_) table.bar(it, total_iterations, rec.seconds);
      const bool end_of_epoch = b == per_epoch;
      if (checkpoint_due(it, epoch, end_of_epoch)) {
        table.clear_bar();  // the checkpoint's line starts at the left, not after the bar
        checkpoint(resume_point(pos, epoch, b, end_of_epoch, rec.seconds));
      }
    }
  }
  table.footer();
  train_seconds_ = train_timer_.seconds() - val_seconds_ - live_seconds_;
  if (graph_) log::info("{}", graph_->summary());
  if (has_val_ && (log_.records().empty() || std::isnan(log_.records().back().validation_loss))) last_val = evaluate();
  if (have_best_) {  // OutputNetwork best-validation-loss
    net_->load_weights(best_);
    last_val = evaluate();
  }
  write_outputs(status, last_val, wall.seconds());
  TrainResult r;
  r.status = status;
  r.model_path = (fs::path(args_.output_dir) / "model.bin").string();
  r.validation_accuracy = last_val.accuracy;
  r.validation_mean_iou = last_val.mean_iou;
  return r;
}

void Trainer::write_outputs(const std::string& status, const Eval& val, double wall) {
  if (!lead_) return;
  live_.reset();  // the final files replace the live ones
  RunFiles files;
  files.dir = args_.output_dir;
  files.status = status;
  files.config_text = args_.config_text;
  files.log = &log_;
  files.epochs = log_.records().empty() ? 0 : log_.records().back().epoch;
  files.iterations = log_.records().empty() ? 0 : log_.records().back().iteration;
  files.validation_accuracy = val.accuracy;
  files.validation_loss = val.loss;
  files.validation_mean_iou = val.mean_iou;
  files.total_learnables = net_->total_learnables();
  files.memory_bytes = net_->memory_bytes();
  files.wall_seconds = wall;
  files.train_images_per_second = train_seconds_ > 0 ? static_cast<double>(images_trained_) / train_seconds_ : 0;
  files.classes = net_->classes();
  files.train_images = train_ds_.size();
  files.validation_images = has_val_ ? val_ds_.size() : 0;
  files.skipped_images = train_loader_->skipped_images() + (val_loader_ ? val_loader_->skipped_images() : 0);
  files.device = device_.str();
  files.precision = o_.precision;
  files.peak_device_memory_bytes = static_cast<int64_t>(backend_for(device_).peak_memory_bytes());
  files.seed = o_.seed;
  files.warnings = warnings_;
  files.plot = o_.plots != "none";
  files.plot_note = plot_note_;
  const IterationRecord* last = log_.records().empty() ? nullptr : &log_.records().back();
  files.progress_info = progress_info(status, last ? last->epoch : 0, files.iterations, last ? last->learn_rate : -1);
  if (status != "diverged") {
    ModelData m = net_->to_model_data();
    m.training_yaml = args_.config_text;
    m.metadata_json = "{\"kind\":\"model\",\"status\":\"" + status + "\"}";
    files.model = &m;
    write_run_files(files);
  } else {
    write_run_files(files);
  }
}

}  // namespace

TrainResult train_network(const Config& config, const TrainArgs& args) {
  Trainer t(config, args);
  return t.run();
}

}  // namespace dlt
