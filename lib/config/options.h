// Typed training and data options with MATLAB's names and defaults. lib/config fills them
// from YAML (and --set overrides); the trainer and data pipeline read them. No YAML here.
// A choice option is an enum; its words are listed once, below, in ChoiceNames (choice.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend_options.h"  // CudnnEngines, BatchNormKernels
#include "backend/solver.h"           // Solver
#include "config/choice.h"
#include "config/schedule_options.h"

namespace dlt {

// Validation metrics by MATLAB's names (trainingOptions Metrics and ObjectiveMetricName):
// accuracy in percent, the others in [0, 1], each macro-averaged over the classes
// (lib/train/validation_metrics.h says how). kIoU is the mean IoU (segmentation's; Jaccard for
// classification); kAuc is for classification only; kLoss is only an objective (the loss is
// always computed).
// Regression: kRmse (sqrt of the mean squared error over every response value, MATLAB's
// RMSE), kMae (mean absolute error), kMape (mean absolute percentage error, percent, over the
// values whose true response is not 0).
enum class Metric { kLoss, kAccuracy, kFScore, kPrecision, kRecall, kAuc, kIoU, kRmse, kMae, kMape };
inline constexpr Metric kAllMetrics[] = {Metric::kLoss,   Metric::kAccuracy, Metric::kFScore, Metric::kPrecision,
                                         Metric::kRecall, Metric::kAuc,      Metric::kIoU,    Metric::kRmse,
                                         Metric::kMae,    Metric::kMape};
// The YAML spelling and the name in log.csv, summary.json and TensorBoard tags.
constexpr const char* metric_name(Metric m) {
  switch (m) {
    case Metric::kLoss:
      return "loss";
    case Metric::kAccuracy:
      return "accuracy";
    case Metric::kFScore:
      return "fscore";
    case Metric::kPrecision:
      return "precision";
    case Metric::kRecall:
      return "recall";
    case Metric::kAuc:
      return "auc";
    case Metric::kIoU:
      return "iou";
    case Metric::kRmse:
      return "rmse";
    case Metric::kMae:
      return "mae";
    case Metric::kMape:
      return "mape";
  }
  return "";
}
// Whether a larger value is better: every metric but the loss and the regression errors.
constexpr bool higher_is_better(Metric m) {
  return m != Metric::kLoss && m != Metric::kRmse && m != Metric::kMae && m != Metric::kMape;
}
// Whether a metric measures a regression (the others measure classification).
constexpr bool regression_metric(Metric m) { return m == Metric::kRmse || m == Metric::kMae || m == Metric::kMape; }

// OutputNetwork: the network the run saves. best-validation-loss (before R2024a) reads as
// kBestValidation, which keeps the best value of ObjectiveMetricName (loss by default).
enum class OutputNetwork { kLastIteration, kBestValidation };

enum class GradientThresholdMethod { kL2Norm, kGlobalL2Norm, kAbsoluteValue };
enum class Shuffle { kOnce, kNever, kEveryEpoch };
enum class BatchNormStatistics { kMoving, kPopulation };  // BatchNormalizationStatistics
enum class VerboseLayout { kAuto, kWide, kCompact };  // the verbose table (dltrain's)
enum class Plots { kTrainingProgress, kNone };        // progress.png or not
enum class ExecutionEnvironment { kAuto, kCpu, kGpu, kMultiGpu, kParallel };
enum class Precision { kSingle, kMixed };
enum class ConvolutionAlgorithm { kAuto, kDirect };
enum class LabelSource { kFolderNames };
// training.Loss: trainnet's lossFcn names (kNone: the output layer's loss).
enum class LossName {
  kNone,
  kCrossEntropy,
  kIndexCrossEntropy,
  kBinaryCrossEntropy,
  kMse,
  kMeanSquaredError,
  kMae,
  kMeanAbsoluteError,
  kHuber,
  kGeneralizedDice,
  kFocalCrossEntropy,
  kTversky
};
enum class OutputSizeMode { kResize, kCenterCrop, kRandCrop };
enum class OnBadImage { kError, kSkip };
enum class Cache { kAuto, kMemory, kFile, kNone };
// ResponseNormalization (regression tables): none, or zscore with the training responses'
// mean and standard deviation (the network learns normalised targets; predictions are undone).
enum class ResponseNormalization { kNone, kZscore };

// The words of each choice, in the enum's order: read (any case), written and listed in errors.
template <>
struct ChoiceNames<Solver> {
  static constexpr std::array<std::string_view, 4> names = {"sgdm", "adam", "rmsprop", "adamw"};
};
template <>
struct ChoiceNames<GradientThresholdMethod> {
  static constexpr std::array<std::string_view, 3> names = {"l2norm", "global-l2norm", "absolute-value"};
};
template <>
struct ChoiceNames<Shuffle> {
  static constexpr std::array<std::string_view, 3> names = {"once", "never", "every-epoch"};
};
template <>
struct ChoiceNames<BatchNormStatistics> {
  static constexpr std::array<std::string_view, 2> names = {"moving", "population"};
};
template <>
struct ChoiceNames<VerboseLayout> {
  static constexpr std::array<std::string_view, 3> names = {"auto", "wide", "compact"};
};
template <>
struct ChoiceNames<Plots> {
  static constexpr std::array<std::string_view, 2> names = {"training-progress", "none"};
};
template <>
struct ChoiceNames<FrequencyUnit> {
  static constexpr std::array<std::string_view, 2> names = {"epoch", "iteration"};
};
template <>
struct ChoiceNames<ExecutionEnvironment> {
  static constexpr std::array<std::string_view, 5> names = {"auto", "cpu", "gpu", "multi-gpu", "parallel"};
};
template <>
struct ChoiceNames<Precision> {
  static constexpr std::array<std::string_view, 2> names = {"single", "mixed"};
};
template <>
struct ChoiceNames<ConvolutionAlgorithm> {
  static constexpr std::array<std::string_view, 2> names = {"auto", "direct"};
};
template <>
struct ChoiceNames<CudnnEngines> {
  static constexpr std::array<std::string_view, 4> names = {"auto", "legacy", "graph", "exhaustive"};
};
template <>
struct ChoiceNames<BatchNormKernels> {
  static constexpr std::array<std::string_view, 2> names = {"cudnn", "dltrain"};
};
template <>
struct ChoiceNames<LabelSource> {
  static constexpr std::array<std::string_view, 1> names = {"foldernames"};
};
template <>
struct ChoiceNames<LossName> {
  static constexpr std::array<std::string_view, 12> names = {"none",
                                                             "crossentropy",
                                                             "index-crossentropy",
                                                             "binary-crossentropy",
                                                             "mse",
                                                             "mean-squared-error",
                                                             "mae",
                                                             "mean-absolute-error",
                                                             "huber",
                                                             "generalized-dice",
                                                             "focal-crossentropy",
                                                             "tversky"};
};
template <>
struct ChoiceNames<OutputSizeMode> {
  static constexpr std::array<std::string_view, 3> names = {"resize", "centercrop", "randcrop"};
};
template <>
struct ChoiceNames<OnBadImage> {
  static constexpr std::array<std::string_view, 2> names = {"error", "skip"};
};
template <>
struct ChoiceNames<ResponseNormalization> {
  static constexpr std::array<std::string_view, 2> names = {"none", "zscore"};
};
template <>
struct ChoiceNames<Cache> {
  static constexpr std::array<std::string_view, 4> names = {"auto", "memory", "file", "none"};
};

// trainingOptions(...)
struct TrainingOptions {
  Solver solver = Solver::kSgdm;
  double initial_learn_rate = 0.01;  // MATLAB: 0.01 for sgdm, 0.001 for adam/rmsprop (and adamw)
  bool initial_learn_rate_set = false;
  // LearnRateSchedule: empty is none; several run in sequence, each starting where the previous
  // one's NumSteps end (MATLAB's cell array {warmupLearnRate, cosineLearnRate}).
  std::vector<ScheduleSpec> learn_rate_schedule;
  double learn_rate_drop_factor = 0.1;
  int64_t learn_rate_drop_period = 10;
  double momentum = 0.9;
  double gradient_decay_factor = 0.9;            // adam and adamw beta1
  double squared_gradient_decay_factor = 0.999;  // adam and adamw 0.999, rmsprop 0.9 (set at resolve)
  bool squared_gradient_decay_factor_set = false;
  double epsilon = 1e-8;
  double l2_regularization = 1e-4;  // added to the gradient; adamw: 0 unless set (set at resolve)
  bool l2_regularization_set = false;
  // WeightDecay (dltrain's, adamw only): decoupled decay w *= 1 - lr * WeightDecay * L2 factor
  // before each step, PyTorch's AdamW weight_decay and default.
  double weight_decay = 0.01;
  double gradient_threshold = -1;  // <= 0 or inf: off
  GradientThresholdMethod gradient_threshold_method = GradientThresholdMethod::kL2Norm;
  int64_t max_epochs = 30;
  int64_t mini_batch_size = 128;
  Shuffle shuffle = Shuffle::kOnce;
  int64_t validation_frequency = 50;
  int64_t validation_patience = -1;                              // < 0: off (MATLAB's Inf)
  OutputNetwork output_network = OutputNetwork::kLastIteration;  // last-iteration | best-validation
  // Metrics: computed at each validation besides loss and accuracy, in this order (empty: none).
  std::vector<Metric> metrics;
  Metric objective_metric = Metric::kLoss;  // ObjectiveMetricName: loss or one of metrics
  // Loss (trainnet's lossFcn): the network's loss when it has no output layer (the network
  // appends the matching one); with an output layer it must name that layer's loss.
  LossName loss = LossName::kNone;
  // TensorBoard: event files in tensorboard_dir, or <output-dir>/tensorboard when it is empty.
  bool tensorboard = false;
  std::string tensorboard_dir;
  // ResetInputNormalization (MATLAB's, true by default): compute the imageInput's statistics from
  // the training data; false: keep those the layer has (its config's Min and Max, or the base
  // model's) and compute only missing ones.
  bool reset_input_normalization = true;
  // BatchNormalizationStatistics (MATLAB's; its default is population): moving keeps batch
  // norm's moving averages; population replaces them, once training ends, by the mean and
  // variance of each batch norm's input over one more pass of the training data.
  BatchNormStatistics batch_normalization_statistics = BatchNormStatistics::kMoving;
  bool verbose = true;
  int64_t verbose_frequency = 50;
  VerboseLayout verbose_layout = VerboseLayout::kAuto;
  Plots plots = Plots::kTrainingProgress;
  double plot_interval_seconds = 10;  // dltrain: the live progress.png at least this often
  std::string checkpoint_path;        // empty: no checkpoints
  int64_t checkpoint_frequency = 1;
  FrequencyUnit checkpoint_frequency_unit = FrequencyUnit::kEpoch;
  ExecutionEnvironment execution_environment = ExecutionEnvironment::kAuto;
  std::vector<double> worker_load;  // empty: equal shares
  int64_t num_workers = 0;          // 0: one per GPU / core group
  int gpu_device = 0;
  Precision precision = Precision::kSingle;
  bool dispatch_in_background = true;
  uint64_t seed = 0;
  bool seed_set = false;
  int threads = 0;  // 0: all cores
  // How this process computes and communicates (docs/config.md "Run environment"). Each has an
  // environment variable that, when set, overrides it (apply_environment_overrides).
  bool cuda_graph = false;  // CudaGraph (DLT_CUDA_GRAPH): captured steps
  bool allow_tf32 = false;  // AllowTF32 (DLT_ALLOW_TF32)
  // AllowReducedPrecisionReduction (DLT_ALLOW_REDUCED_PRECISION_REDUCTION): Precision: mixed
  // convolutions on the GPU may use cuDNN engines that reduce in less than float32.
  bool allow_reduced_precision_reduction = false;
  // CudnnRuntimeCompiled (DLT_CUDNN_RUNTIME_COMPILED): the GPU's search for grouped and depthwise
  // convolutions also times cuDNN engines that compile at run time.
  bool cudnn_runtime_compiled = true;
  // CudaFusedClippedRelu (DLT_CUDA_FUSED_CLIPPED_RELU): a clippedRelu after a convolution runs in
  // the GPU convolution's epilogue.
  bool cuda_fused_clipped_relu = false;
  ConvolutionAlgorithm convolution_algorithm = ConvolutionAlgorithm::kAuto;  // ConvolutionAlgorithm (DLT_CONV_ALGO)
  int64_t cudnn_workspace_mb = 1024;                 // CudnnWorkspaceMB (DLT_CUDNN_WORKSPACE_MB)
  bool deterministic = false;                        // Deterministic: cuDNN's deterministic algorithms only
  bool fused_convolution = true;                     // FusedConvolution: cuDNN's conv + bias + relu
  CudnnEngines cudnn_engines = CudnnEngines::kAuto;  // CudnnEngines (DLT_CUDNN_ENGINES)
  bool batch_norm_ex = true;                         // BatchNormEx: cuDNN's batch norm Ex calls
  BatchNormKernels batch_norm_kernels = BatchNormKernels::kCudnn;  // BatchNormKernels (DLT_BN_KERNELS)
  bool fused_batch_norm_pooling = true;  // FusedBatchNormPooling: CPU bn + relu + max pooling as one op
  double gradient_bucket_size_mb = 0;    // GradientBucketSizeMB (DLT_BUCKET_MB); 0: auto
  double communication_timeout = 60;     // CommunicationTimeout (DLT_COMM_TIMEOUT), seconds
  bool communication_timing = false;     // CommunicationTiming (DLT_COMM_TIMING)

  // MATLAB's solver-dependent defaults, applied after reading; adamw's are PyTorch's AdamW
  // (its decay is WeightDecay, so no L2 term by default).
  void resolve_defaults() {
    if (!initial_learn_rate_set) initial_learn_rate = solver == Solver::kSgdm ? 0.01 : 0.001;
    if (!squared_gradient_decay_factor_set) squared_gradient_decay_factor = solver == Solver::kRmsprop ? 0.9 : 0.999;
    if (!l2_regularization_set && solver == Solver::kAdamW) l2_regularization = 0;
  }
};

// imageDataAugmenter(...)
struct AugmentOptions {
  bool rand_x_reflection = false;
  bool rand_y_reflection = false;
  double rand_rotation[2] = {0, 0};  // degrees
  double rand_scale[2] = {1, 1};
  double rand_x_scale[2] = {1, 1};  // horizontal and vertical scale apart (not with rand_scale)
  double rand_y_scale[2] = {1, 1};
  double rand_x_shear[2] = {0, 0};  // degrees, in (-90, 90)
  double rand_y_shear[2] = {0, 0};
  double rand_x_translation[2] = {0, 0};  // pixels
  double rand_y_translation[2] = {0, 0};
  int64_t pad_crop = 0;  // padded random crop: pad by this many pixels, crop back
  // FillValue: what the warp and PadCrop bring in from outside the image, one value or one per
  // channel in [0, 255] (empty: 0).
  std::vector<double> fill_value;
  // Whether the axis scales or shears are drawn (draw_affine draws their four values only then).
  bool axis_scale_or_shear() const {
    return rand_x_scale[0] != 1 || rand_x_scale[1] != 1 || rand_y_scale[0] != 1 || rand_y_scale[1] != 1 ||
           rand_x_shear[0] != 0 || rand_x_shear[1] != 0 || rand_y_shear[0] != 0 || rand_y_shear[1] != 0;
  }
  bool any() const {
    return rand_x_reflection || rand_y_reflection || rand_rotation[0] != 0 || rand_rotation[1] != 0 ||
           rand_scale[0] != 1 || rand_scale[1] != 1 || rand_x_translation[0] != 0 || rand_x_translation[1] != 0 ||
           rand_y_translation[0] != 0 || rand_y_translation[1] != 0 || pad_crop != 0 || axis_scale_or_shear();
  }
};

// Whether a data path names a CSV table (ends in .csv, any case) rather than a folder.
inline bool is_table_path(const std::string& path) {
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  for (char& ch : ext) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  return ext == ".csv";
}

// The data: section: imageDatastore + splitEachLabel + augmentedImageDatastore, or for
// segmentation imageDatastore + pixelLabelDatastore pairs (train: {images, labels}), or for
// regression and multi-label classification a CSV table of images and targets (data/table.h).
struct DataOptions {
  std::string train;                     // folder of class folders or .csv table; segmentation: the images
  std::string validation;                // folder or .csv table, or empty; segmentation: the images folder
  std::string train_labels;              // segmentation: the label images folder (pixelLabelDatastore)
  std::string validation_labels;         // segmentation: the validation label images folder
  std::vector<std::string> class_names;  // ClassNames (segmentation; multi-label tables: optional)
  // LabelIDs (segmentation): per class, the pixel values that mean it, each either one integer
  // (index / grey label images) or an RGB triplet (colour-coded labels, camvidPixelLabelIDs).
  std::vector<std::vector<std::vector<int64_t>>> label_ids;
  bool segmentation() const { return !train_labels.empty(); }
  bool table() const { return is_table_path(train); }  // regression or multi-label (data/table.h)
  double validation_split = 0;                         // splitEachLabel fraction for validation when no folder given
  bool include_subfolders = true;
  LabelSource label_source = LabelSource::kFolderNames;
  std::vector<std::string> file_extensions;  // empty: every format stb_image reads
  OutputSizeMode output_size_mode = OutputSizeMode::kResize;
  AugmentOptions augment;
  // AugmentRegression (dltrain's): geometric augmentation of a regression table is allowed
  // (the user says the responses do not depend on the geometry); false: it is a ConfigError.
  bool augment_regression = false;
  OnBadImage on_bad_image = OnBadImage::kError;
  Cache cache = Cache::kAuto;
  int64_t loader_threads = 0;  // 0: automatic
  ResponseNormalization response_normalization = ResponseNormalization::kNone;
};

// What is wrong with ClassNames / LabelIDs, or "" when nothing: no classes, more than 255,
// different lengths, a class with no value, a value outside 0..255, a value that is neither
// one integer nor an RGB triplet, integers mixed with triplets, or one value for two classes.
// config/ reports it at LabelIDs' line; data/pixel_labels checks again where it builds its map.
std::string label_ids_problem(const std::vector<std::string>& class_names,
                              const std::vector<std::vector<std::vector<int64_t>>>& label_ids);

}  // namespace dlt
