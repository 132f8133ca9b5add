// prepare_run (run_setup.h): the data, the network checked against it, the loaders, the
// input statistics and the optimizer of a training run.
#include "train/run_setup.h"

#include <algorithm>

#include "backend/backend.h"
#include "data/input_fit.h"
#include "data/label_images.h"
#include "dist/data_parallel.h"
#include "onnx/transfer.h"
#include "train/class_weights.h"
#include "train/execution.h"
#include "train/targets.h"
#include "util/error.h"
#include "util/log.h"
#include "util/timer.h"

namespace dlt {
namespace {

void load_data(TrainingRun& run) {
  const Config& cfg = run.config;
  const TrainingOptions& o = run.options;
  const DataOptions& d = cfg.data;
  if (d.train.empty()) throw ConfigError(cfg.path + ": data.train is not set (a folder of class folders)");
  const bool pixels = d.segmentation();
  TrainValData data = load_train_val(d, o.seed);
  run.train_data = std::move(data.train);
  run.validation_data = std::move(data.validation);
  run.has_validation = data.has_validation;
  if (pixels && run.train_data.num_classes() < 2)
    throw ConfigError(cfg.path + ": data.ClassNames has one class; segmentation needs at least 2");
  if (run.train_data.target_kind() == TargetKind::kResponses) {
    // regression: no classes
  } else if (run.train_data.target_kind() == TargetKind::kMultiLabel) {
    if (run.train_data.num_classes() < 1) throw DataError(d.train + ": the table names no label in its Labels column");
  } else if (run.train_data.num_classes() < 2)
    throw DataError(d.train + ": only one class folder ('" + run.train_data.classes().at(0) +
                    "'); classification needs at least 2 (one folder per class)");
  if (run.train_data.size() < o.mini_batch_size)
    throw ConfigError("training.MiniBatchSize is " + std::to_string(o.mini_batch_size) + " but " + d.train +
                      " has only " + std::to_string(run.train_data.size()) +
                      " training images (use a smaller MiniBatchSize)");
}

// A checkpoint whose position is past MaxEpochs is refused before the network is built; one at
// MaxEpochs (a run killed after its last checkpoint, before its outputs were written) leaves the
// loop nothing to do, and the resumed run writes the outputs, with one line saying so. Rank 0 reads the position and
// shares it (the other ranks may have no copy of the file); an unreadable file is left to the checkpoint loader to
// report.
void check_resume(TrainingRun& run) {
  const std::string& path = run.args.resume;
  if (path.empty()) return;
  double pos[4] = {0, 0, 0, 0};  // readable (1), epoch (0-based), batches done in it, iteration
  if (run.comm->rank() == 0) {
    try {
      const TrainPosition p = read_checkpoint_position(path);
      pos[0] = 1;
      pos[1] = static_cast<double>(p.epoch);
      pos[2] = static_cast<double>(p.batch_in_epoch);
      pos[3] = static_cast<double>(p.iteration);
    } catch (const Error&) {
    }
  }
  if (run.comm->size() > 1) run.comm->all_reduce_sum(pos, 4);
  if (pos[0] == 0) return;
  const TrainingOptions& o = run.options;
  const int64_t per_epoch = run.train_data.size() / o.mini_batch_size;  // the training loader's count
  const auto epoch = static_cast<int64_t>(pos[1]), batches = static_cast<int64_t>(pos[2]);
  const auto iteration = static_cast<int64_t>(pos[3]);
  const int64_t done = epoch + (batches >= per_epoch ? 1 : 0);  // epochs completed
  if (done < o.max_epochs) return;
  if (done == o.max_epochs) {  // killed after its last checkpoint: the resumed run writes its outputs
    log::info(
        "--resume {}: the checkpoint has finished all {} epoch{}{}: nothing is left to train, the run's outputs "
        "are written from it (to train on, give --set training.MaxEpochs={})",
        path, done, done == 1 ? "" : "s", iteration > 0 ? " (iteration " + std::to_string(iteration) + ")" : "",
        done + o.max_epochs);
    return;
  }
  throw ConfigError("--resume " + path + ": the checkpoint has finished " + std::to_string(done) + " epoch" +
                    (done == 1 ? "" : "s") + (iteration > 0 ? " (iteration " + std::to_string(iteration) + ")" : "") +
                    " and training.MaxEpochs is " + std::to_string(o.max_epochs) +
                    ": nothing is left to train (MaxEpochs counts from the start: for " + std::to_string(o.max_epochs) +
                    " more epoch" + (o.max_epochs == 1 ? "" : "s") +
                    " give --set training.MaxEpochs=" + std::to_string(done + o.max_epochs) + ")");
}

// Options the config accepts but this run does not use (config.warnings): one line each.
void log_option_warnings(const TrainingRun& run) {
  for (const std::string& w : run.config.warnings) log::warn("{}", w);
}

// The data against the network's loss: responses for a regression loss, label sets for a
// multi-label one, class folders or pixel labels for the others; as many outputs per image as
// the data has values. Regression: the response names and, with data.ResponseNormalization
// zscore, the training responses' statistics (the targets are normalised from then on).
void check_targets(TrainingRun& run, const Layer& output) {
  const Config& cfg = run.config;
  Network& net = *run.net;
  const std::string task = net.task();
  const TargetKind kind = run.train_data.target_kind();
  const std::string where = output.spec().loc.prefix() + "layer '" + output.name() + "' (" + output.type() + ")";
  const std::string table = kind == TargetKind::kResponses     ? "a table of responses"
                            : kind == TargetKind::kMultiLabel  ? "a table of label sets"
                            : kind == TargetKind::kPixelLabels ? "pixel label images"
                                                               : "a folder of class folders";
  if (task == "regression" && kind != TargetKind::kResponses)
    throw ConfigError(where + ": a regression loss needs responses, but data.train is " + table +
                      " (give a CSV table of File and response columns: docs/config.md, \"Tables\")");
  if (task == "multilabel" && kind != TargetKind::kMultiLabel)
    throw ConfigError(where + ": binary-crossentropy needs a label set per image, but data.train is " + table +
                      " (give a CSV table of File and Labels columns: docs/config.md, \"Tables\")");
  if ((task == "classification" || task == "segmentation") &&
      (kind == TargetKind::kResponses || kind == TargetKind::kMultiLabel))
    throw ConfigError(where + ": " + task + " losses need class labels, but data.train is " + table +
                      (kind == TargetKind::kResponses ? " (for responses use training.Loss: mse, or a regression layer)"
                                                      : " (for label sets use sigmoid and training.Loss: "
                                                        "binary-crossentropy)"));
  if (task != "regression" && cfg.data.response_normalization != ResponseNormalization::kNone)
    throw ConfigError(cfg.path +
                      ": data.ResponseNormalization applies to regression (a table of responses); this run's "
                      "loss is " +
                      task + "'s");
  if (!net.float_targets()) return;
  const int64_t width = run.train_data.target_width();
  if (net.output_width() != width) {
    const Layer& last = net.layer(net.size() - (task == "multilabel" ? 3 : 2));
    throw ConfigError(last.spec().loc.prefix() + "layer '" + last.name() + "' outputs " +
                      std::to_string(net.output_width()) + " values per image but " + cfg.data.train + " has " +
                      std::to_string(width) + (task == "regression" ? " responses" : " labels") +
                      " (set OutputSize: " + std::to_string(width) + ")");
  }
  if (task != "regression") return;
  net.response_names() = run.train_data.response_names();
  if (cfg.data.response_normalization != ResponseNormalization::kZscore) return;
  std::vector<float> rows, mean, sd;
  for (int64_t i = 0; i < run.train_data.size(); ++i)
    rows.insert(rows.end(), run.train_data.targets(i), run.train_data.targets(i) + width);
  response_statistics(rows, width, mean, sd);
  net.set_response_statistics(std::move(mean), std::move(sd));
}

void prepare_network(TrainingRun& run) {
  const Config& cfg = run.config;
  const TrainingOptions& o = run.options;
  // The run's ops follow the run's backend options (AllowTF32, ConvolutionAlgorithm, ...).
  run.net = std::make_unique<Network>(network_for_training(cfg), backend_for(run.device, backend_options_for(o)));
  run.net->classes() = run.train_data.classes();
  run.net->label_ids() = cfg.data.label_ids;
  const Layer& output = run.net->layer(run.net->size() - 1);
  check_targets(run, output);
  if (run.net->per_pixel() != cfg.data.segmentation())
    throw ConfigError(output.spec().loc.prefix() + "layer '" + output.name() + "' is a" +
                      (run.net->per_pixel() ? " per-pixel output but data.train is a folder of class folders (give "
                                              "train: {images: DIR, labels: DIR}, ClassNames and LabelIDs)"
                                            : "n image-level output but data.train has pixel labels (end the network "
                                              "in softmax + pixelClassification)"));
  if (run.net->per_pixel()) {
    const Shape out = run.net->output_shape(run.net->size() - 1), in = run.net->input_shape();
    if (out[0] != in[0] || out[1] != in[1])
      throw ConfigError(output.spec().loc.prefix() + "layer '" + output.name() + "' outputs " + out.str() +
                        " but the labels are " + std::to_string(in[0]) + "x" + std::to_string(in[1]) +
                        " (the input size); the network must restore the input's height and width");
    if (run.net->num_classes() != run.train_data.num_classes())
      throw ConfigError(output.spec().loc.prefix() + "layer '" + output.name() + "' scores " +
                        std::to_string(run.net->num_classes()) + " classes but data.ClassNames has " +
                        std::to_string(run.train_data.num_classes()) +
                        " (set NumClasses / NumFilters of the last "
                        "convolution to " +
                        std::to_string(run.train_data.num_classes()) + ")");
  }
  if (!run.net->float_targets() && run.net->num_classes() != run.train_data.num_classes()) {
    const Layer& fc = run.net->layer(run.net->size() - 3);
    throw ConfigError(fc.spec().loc.prefix() + "layer '" + fc.name() + "' outputs " +
                      std::to_string(run.net->num_classes()) + " classes but " + cfg.data.train + " has " +
                      std::to_string(run.train_data.num_classes()) +
                      " class folders (set OutputSize: " + std::to_string(run.train_data.num_classes()) + ")");
  }
  run.net->init_params(o.seed);
  if (cfg.base.weights) apply_base_weights(*run.net, *cfg.base.weights);  // transfer: kept layers
  const Shape& in = run.net->input_shape();
  const size_t fills = cfg.data.augment.fill_value.size();
  if (fills > 1 && static_cast<int64_t>(fills) != in[2])
    throw ConfigError(cfg.path + ": data.Augmentation.FillValue has " + std::to_string(fills) +
                      " values but the images have " + std::to_string(in[2]) +
                      " channels (InputSize): give one value, or one per channel");
  // Each rank loads its own share of every global mini-batch (training and validation).
  LoaderOptions train_opt = loader_options(cfg.data, o, in, true), val_opt = loader_options(cfg.data, o, in, false);
  train_opt.rank = val_opt.rank = run.comm->rank();
  train_opt.world_size = val_opt.world_size = run.comm->size();
  run.train_loader = std::make_unique<BatchLoader>(run.train_data, train_opt);
  if (run.has_validation) run.validation_loader = std::make_unique<BatchLoader>(run.validation_data, val_opt);
  // Once per datastore (rank 0 logs): images without InputSize's size and channels, and what is done.
  if (run.comm->rank() == 0) {
    const std::string fit = input_fit_note(run.train_data, in, cfg.data.output_size_mode, true, "training");
    if (!fit.empty()) log::info("{}", fit);
    const std::string val_fit =
        run.has_validation ? input_fit_note(run.validation_data, in, cfg.data.output_size_mode, false, "validation")
                           : "";
    if (!val_fit.empty()) log::info("{}", val_fit);
  }
  // ResetInputNormalization (MATLAB's): true computes the statistics from the training data;
  // false keeps those the imageInput has (given in the config, or the base model's).
  ImageInputLayer& input = run.net->input_layer();
  const bool from_base =
      cfg.base.weights && std::any_of(cfg.base.weights->states.begin(), cfg.base.weights->states.end(),
                                      [&](const NamedTensor& t) { return t.layer == input.name(); });
  const bool keep = !o.reset_input_normalization && (from_base || input.given_statistics());
  if (input.normalization() != "none" && keep)
    log::info("input normalization '{}' from the {} (ResetInputNormalization false)", input.normalization(),
              from_base ? "base model" : "statistics the config gives");
  if (input.normalization() != "none" && o.reset_input_normalization && (from_base || input.given_statistics()))
    log::info(
        "input normalization '{}': {} recomputed from the training data (ResetInputNormalization true, "
        "MATLAB's default; false keeps them)",
        input.normalization(), from_base ? "the base model's statistics are" : "the statistics the config gives are");
  // Options written that this run does not use (their defaults are never judged).
  const std::string& path = cfg.path;
  if (!o.reset_input_normalization && (input.normalization() == "none" || (!from_base && !input.given_statistics())))
    log::warn(
        "{}: training.ResetInputNormalization false has no effect: the imageInput has no statistics to keep "
        "(Normalization {}, none given in the config, no base model's)",
        path, input.normalization());
  if (o.batch_normalization_statistics == BatchNormStatistics::kPopulation && !run.net->has_population_statistics())
    log::warn(
        "{}: training.BatchNormalizationStatistics population has no effect: the network has no batch "
        "normalization",
        path);
  if (!cfg.data.augment.fill_value.empty() && !cfg.data.augment.any())
    log::warn(
        "{}: data.Augmentation.FillValue has no effect: no augmentation brings in pixels from outside the "
        "image (RandRotation, RandScale, the translations, PadCrop, ...)",
        path);
  if (input.normalization() != "none" && !keep) {
    Timer t;
    DatasetStats st = compute_stats(run.train_data, loader_options(cfg.data, o, in, false));
    int64_t c = in[2];
    Tensor mean(Shape{c}), sd(Shape{c}), lo(Shape{c}), hi(Shape{c});
    for (int64_t i = 0; i < c; ++i) {
      mean.data()[i] = static_cast<float>(st.channel_mean[i]);
      sd.data()[i] = static_cast<float>(st.channel_std[i]);
      lo.data()[i] = static_cast<float>(st.channel_min[i]);
      hi.data()[i] = static_cast<float>(st.channel_max[i]);
    }
    run.net->input_layer().set_statistics(st.mean_image, mean, sd, lo, hi);
    log::info("input normalization '{}' from {} training images ({:.1f} s)", run.net->input_layer().normalization(),
              st.count, t.seconds());
  }
  broadcast_model(*run.comm, *run.net);  // identical seeds already agree; rank 0's model wins
  run.optimizer = std::make_unique<Optimizer>(o, run.net->params());
  run.net->set_mixed_precision(o.precision == Precision::kMixed);
  run.net->set_batch(o.mini_batch_size);
}

}  // namespace

void prepare_run(TrainingRun& run) {
  log_option_warnings(run);
  load_data(run);
  check_resume(run);
  prepare_network(run);
}

}  // namespace dlt
