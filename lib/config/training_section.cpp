// The training: section (MATLAB trainingOptions names) <-> TrainingOptions.
#include <limits>
#include <sstream>
#include <stdexcept>

#include "config/fields.h"
#include "config/sections.h"

namespace dlt::cfg {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using TO = TrainingOptions;

// A metric by its MATLAB name (case-insensitive); `allow_loss` for ObjectiveMetricName.
Metric read_metric(const ValueCtx& c, const YAML::Node& n, bool allow_loss) {
  std::vector<std::string> names;
  for (Metric m : kAllMetrics)
    if (allow_loss || m != Metric::kLoss) names.push_back(metric_name(m));
  const std::string expect =
      allow_loss ? "loss or a name in Metrics (" + join(names, ", ") + ")" : "a list of " + join(names, ", ");
  if (!n.IsScalar()) c.bad(expect);
  for (Metric m : kAllMetrics)
    if (iequals(n.Scalar(), metric_name(m))) {
      if (m == Metric::kLoss && !allow_loss) c.bad(expect, " (the loss is always computed; list the other metrics)");
      return m;
    }
  c.bad(expect, did_you_mean(n.Scalar(), names));
}

FieldDef<TO> metrics_field() {
  return {"Metrics",
          [](const ValueCtx& c, TO& o) {
            std::vector<Metric> out;
            auto one = [&](const YAML::Node& n) {
              const Metric m = read_metric(c, n, false);
              for (Metric have : out)
                if (have == m) c.bad("a list of distinct metrics", std::string(" (") + metric_name(m) + " twice)");
              out.push_back(m);
            };
            // MATLAB's [fscore auc] (one scalar with spaces) counts as [fscore, auc].
            auto words = [&](const YAML::Node& n) {
              if (!n.IsScalar()) return one(n);
              std::istringstream in(n.Scalar());
              for (std::string w; in >> w;) one(YAML::Node(w));
            };
            if (c.value.IsSequence()) {
              for (const auto& n : c.value) words(n);
            } else if (!c.value.IsNull() && !iequals(c.value.Scalar(), "none")) {
              words(c.value);
            }
            o.metrics = out;
          },
          [](YAML::Emitter& e, const TO& o) {
            e << YAML::Flow << YAML::BeginSeq;
            for (Metric m : o.metrics) e << metric_name(m);
            e << YAML::EndSeq;
          }};
}

// ObjectiveMetricName; that it is loss or listed in Metrics is checked once both are read.
FieldDef<TO> objective_field() {
  return {"ObjectiveMetricName", [](const ValueCtx& c, TO& o) { o.objective_metric = read_metric(c, c.value, true); },
          [](YAML::Emitter& e, const TO& o) { e << metric_name(o.objective_metric); }};
}

// OutputNetwork: last-iteration | best-validation; best-validation-loss is the older spelling.
FieldDef<TO> output_network_field() {
  return {"OutputNetwork",
          [](const ValueCtx& c, TO& o) {
            const std::vector<std::string> choices = {"last-iteration", "best-validation", "best-validation-loss"};
            const std::string expect = "one of " + join(choices, ", ");
            const std::string t = c.scalar(expect);
            if (iequals(t, choices[0]))
              o.output_network = OutputNetwork::kLastIteration;
            else if (iequals(t, choices[1]) || iequals(t, choices[2]))
              o.output_network = OutputNetwork::kBestValidation;
            else
              c.bad(expect, did_you_mean(t, choices));
          },
          [](YAML::Emitter& e, const TO& o) {
            e << (o.output_network == OutputNetwork::kLastIteration ? "last-iteration" : "best-validation");
          }};
}

// TensorBoard: true (<output-dir>/tensorboard), false, or the folder for the event files.
FieldDef<TO> tensorboard_field() {
  return {"TensorBoard",
          [](const ValueCtx& c, TO& o) {
            const std::string t = c.value.IsNull() ? "false" : c.scalar("true, false or a folder");
            bool b;
            o.tensorboard_dir.clear();
            if (parse_bool(t, &b)) {
              o.tensorboard = b;
            } else {
              o.tensorboard = true;
              o.tensorboard_dir = t;
            }
          },
          [](YAML::Emitter& e, const TO& o) {
            if (!o.tensorboard_dir.empty())
              e << YAML::DoubleQuoted << o.tensorboard_dir;
            else
              e << (o.tensorboard ? "true" : "false");
          }};
}

const std::vector<FieldDef<TO>>& fields() {
  static const std::vector<FieldDef<TO>> f = [] {
    std::vector<FieldDef<TO>> v;
    v.push_back(choice_field<TO>(
        "Solver", [](auto& o) -> auto& { return o.solver; }));
    auto lr = double_field<TO>(
        "InitialLearnRate", 0, true, kInf, true, "a positive number",
        [](auto& o) -> auto& { return o.initial_learn_rate; });
    auto lr_read = lr.read;
    lr.read = [lr_read](const ValueCtx& c, TO& o) {
      lr_read(c, o);
      o.initial_learn_rate_set = true;
    };
    v.push_back(lr);
    v.push_back({"LearnRateSchedule",
                 [](const ValueCtx& c, TO& o) {
                   o.learn_rate_schedule = read_learn_rate_schedule(c.key, c.value, c.origin, c.name);
                 },
                 [](YAML::Emitter& e, const TO& o) { write_learn_rate_schedule(e, o.learn_rate_schedule); }});
    v.push_back(double_field<TO>(
        "LearnRateDropFactor", 0, false, 1, false, "a number in [0, 1]",
        [](auto& o) -> auto& { return o.learn_rate_drop_factor; }));
    v.push_back(int_field<TO>(
        "LearnRateDropPeriod", 1, "a positive integer", [](auto& o) -> auto& { return o.learn_rate_drop_period; }));
    v.push_back(double_field<TO>(
        "Momentum", 0, false, 1, false, "a number in [0, 1]", [](auto& o) -> auto& { return o.momentum; }));
    v.push_back(double_field<TO>(
        "GradientDecayFactor", 0, false, 1, true, "a number in [0, 1)",
        [](auto& o) -> auto& { return o.gradient_decay_factor; }));
    auto sq = double_field<TO>(
        "SquaredGradientDecayFactor", 0, false, 1, true, "a number in [0, 1)",
        [](auto& o) -> auto& { return o.squared_gradient_decay_factor; });
    auto sq_read = sq.read;
    sq.read = [sq_read](const ValueCtx& c, TO& o) {
      sq_read(c, o);
      o.squared_gradient_decay_factor_set = true;
    };
    v.push_back(sq);
    v.push_back(double_field<TO>(
        "Epsilon", 0, true, kInf, true, "a positive number", [](auto& o) -> auto& { return o.epsilon; }));
    auto l2 = double_field<TO>(
        "L2Regularization", 0, false, kInf, true, "a number >= 0",
        [](auto& o) -> auto& { return o.l2_regularization; });
    auto l2_read = l2.read;
    l2.read = [l2_read](const ValueCtx& c, TO& o) {
      l2_read(c, o);
      o.l2_regularization_set = true;
    };
    v.push_back(l2);
    v.push_back(double_field<TO>(
        "WeightDecay", 0, false, kInf, true, "a number >= 0", [](auto& o) -> auto& { return o.weight_decay; }));
    v.push_back(double_or_inf_field<TO>(
        "GradientThreshold", [](auto& o) -> auto& { return o.gradient_threshold; }));
    v.push_back(choice_field<TO>(
        "GradientThresholdMethod", [](auto& o) -> auto& { return o.gradient_threshold_method; }));
    v.push_back(int_field<TO>(
        "MaxEpochs", 1, "a positive integer", [](auto& o) -> auto& { return o.max_epochs; }));
    v.push_back(int_field<TO>(
        "MiniBatchSize", 1, "a positive integer", [](auto& o) -> auto& { return o.mini_batch_size; }));
    v.push_back(choice_field<TO>(
        "Shuffle", [](auto& o) -> auto& { return o.shuffle; }));
    v.push_back(int_field<TO>(
        "ValidationFrequency", 1, "a positive integer", [](auto& o) -> auto& { return o.validation_frequency; }));
    v.push_back(int_or_inf_field<TO>(
        "ValidationPatience", [](auto& o) -> auto& { return o.validation_patience; }));
    v.push_back(choice_field<TO>(
        "Loss", [](auto& o) -> auto& { return o.loss; }));
    v.push_back(output_network_field());
    v.push_back(metrics_field());
    v.push_back(objective_field());
    v.push_back(bool_field<TO>(
        "ResetInputNormalization", [](auto& o) -> auto& { return o.reset_input_normalization; }));
    v.push_back(choice_field<TO>(
        "BatchNormalizationStatistics", [](auto& o) -> auto& { return o.batch_normalization_statistics; }));
    v.push_back(bool_field<TO>(
        "Verbose", [](auto& o) -> auto& { return o.verbose; }));
    v.push_back(int_field<TO>(
        "VerboseFrequency", 1, "a positive integer", [](auto& o) -> auto& { return o.verbose_frequency; }));
    v.push_back(choice_field<TO>(
        "VerboseLayout", [](auto& o) -> auto& { return o.verbose_layout; }));
    v.push_back(choice_field<TO>(
        "Plots", [](auto& o) -> auto& { return o.plots; }));
    v.push_back(tensorboard_field());
    v.push_back(double_field<TO>(
        "PlotIntervalSeconds", 0, true, kInf, true, "a positive number of seconds",
        [](auto& o) -> auto& { return o.plot_interval_seconds; }));
    v.push_back(string_field<TO>(
        "CheckpointPath", [](auto& o) -> auto& { return o.checkpoint_path; }));
    v.push_back(int_field<TO>(
        "CheckpointFrequency", 1, "a positive integer", [](auto& o) -> auto& { return o.checkpoint_frequency; }));
    v.push_back(choice_field<TO>(
        "CheckpointFrequencyUnit", [](auto& o) -> auto& { return o.checkpoint_frequency_unit; }));
    v.push_back(choice_field<TO>(
        "ExecutionEnvironment", [](auto& o) -> auto& { return o.execution_environment; }));
    v.push_back(nonneg_list_field<TO>(
        "WorkerLoad", [](auto& o) -> auto& { return o.worker_load; }));
    v.push_back(int_field<TO>(
        "NumWorkers", 0, "an integer >= 0", [](auto& o) -> auto& { return o.num_workers; }));
    v.push_back(int_field<TO>(
        "GPUDevice", 0, "an integer >= 0", [](auto& o) -> auto& { return o.gpu_device; }));
    v.push_back(choice_field<TO>(
        "Precision", [](auto& o) -> auto& { return o.precision; }));
    v.push_back(bool_field<TO>(
        "DispatchInBackground", [](auto& o) -> auto& { return o.dispatch_in_background; }));
    FieldDef<TO> seed{"Seed",
                      [](const ValueCtx& c, TO& o) {
                        uint64_t s;
                        if (!parse_uint(c.scalar("an integer >= 0"), &s)) c.bad("an integer >= 0");
                        o.seed = s;
                        o.seed_set = true;
                      },
                      [](YAML::Emitter& e, const TO& o) { e << std::to_string(o.seed); }};
    v.push_back(seed);
    v.push_back(int_field<TO>(
        "Threads", 0, "an integer >= 0", [](auto& o) -> auto& { return o.threads; }));
    v.push_back(bool_field<TO>(
        "CudaGraph", [](auto& o) -> auto& { return o.cuda_graph; }));
    v.push_back(bool_field<TO>(
        "AllowTF32", [](auto& o) -> auto& { return o.allow_tf32; }));
    v.push_back(bool_field<TO>(
        "AllowReducedPrecisionReduction", [](auto& o) -> auto& { return o.allow_reduced_precision_reduction; }));
    v.push_back(bool_field<TO>(
        "CudnnRuntimeCompiled", [](auto& o) -> auto& { return o.cudnn_runtime_compiled; }));
    v.push_back(bool_field<TO>(
        "CudaFusedClippedRelu", [](auto& o) -> auto& { return o.cuda_fused_clipped_relu; }));
    v.push_back(choice_field<TO>(
        "ConvolutionAlgorithm", [](auto& o) -> auto& { return o.convolution_algorithm; }));
    v.push_back(int_field<TO>(
        "CudnnWorkspaceMB", 0, "an integer >= 0 (MiB)", [](auto& o) -> auto& { return o.cudnn_workspace_mb; }));
    v.push_back(bool_field<TO>(
        "Deterministic", [](auto& o) -> auto& { return o.deterministic; }));
    v.push_back(bool_field<TO>(
        "FusedConvolution", [](auto& o) -> auto& { return o.fused_convolution; }));
    v.push_back(choice_field<TO>(
        "CudnnEngines", [](auto& o) -> auto& { return o.cudnn_engines; }));
    v.push_back(bool_field<TO>(
        "BatchNormEx", [](auto& o) -> auto& { return o.batch_norm_ex; }));
    v.push_back(choice_field<TO>(
        "BatchNormKernels", [](auto& o) -> auto& { return o.batch_norm_kernels; }));
    v.push_back(bool_field<TO>(
        "FusedBatchNormPooling", [](auto& o) -> auto& { return o.fused_batch_norm_pooling; }));
    v.push_back(auto_or_positive_field<TO>(
        "GradientBucketSizeMB", "auto or a positive number of megabytes",
        [](auto& o) -> auto& { return o.gradient_bucket_size_mb; }));
    v.push_back(positive_or_inf_field<TO>(
        "CommunicationTimeout", "a positive number of seconds or Inf",
        [](auto& o) -> auto& { return o.communication_timeout; }));
    v.push_back(bool_field<TO>(
        "CommunicationTiming", [](auto& o) -> auto& { return o.communication_timing; }));
    return v;
  }();
  return f;
}

// MATLAB trainingOptions names that dltrain does not read, with what to write instead.
// (ValidationData arrives here only when data: is not a map; move_training_aliases maps it.)
std::string matlab_hint(const std::string& key) {
  if (key == "ValidationData") return " (give the validation folder as data.validation, or data.ValidationSplit)";
  if (key == "SolverName") return " (write Solver: sgdm)";
  if (key == "OutputFcn")
    return " (dltrain runs no callbacks: read log.csv and progress.png in the output folder, which are "
           "updated while training runs)";
  if (key == "SequenceLength" || key == "SequencePaddingValue" || key == "SequencePaddingDirection")
    return " (a sequence option: dltrain trains image classifiers only, remove it)";
  return "";
}

}  // namespace

void read_training(const YAML::Node& node, const Origin& origin, TrainingOptions& out) {
  read_section(node, origin, fields(), "training", "training option", out, matlab_hint);
  const Metric objective = out.objective_metric;
  if (objective == Metric::kLoss) return;
  for (Metric m : out.metrics)
    if (m == objective) return;
  std::string where;
  for (const Entry& e : map_entries(node, origin, "training"))
    if (e.key == "ObjectiveMetricName") where = origin.at(e.key_node);
  throw ConfigError(where + "training.ObjectiveMetricName is " + metric_name(objective) +
                    " but training.Metrics does not list it (add " + metric_name(objective) +
                    " to Metrics, or watch loss)");
}

void read_training_value(const std::string& option, const std::string& text, TrainingOptions& out,
                         const std::function<void(const std::string& expect, const std::string& hint)>& fail) {
  for (const auto& f : fields())
    if (f.name == option) {
      const Origin origin("");
      f.read(ValueCtx{origin, "training." + option, YAML::Node(option), YAML::Node(text), fail}, out);
      return;
    }
  throw std::logic_error("read_training_value: no training option " + option);
}

// Every option, except those the solver does not read (they would be refused on reading back).
void write_training(YAML::Emitter& e, const TrainingOptions& opts) {
  std::vector<FieldDef<TO>> used;
  for (const auto& f : fields())
    if (solver_reads(f.name, opts.solver)) used.push_back(f);
  write_section(e, used, opts);
}

std::vector<std::string> training_keys() { return field_names(fields()); }

std::string unknown_training_message(const std::string& key) {
  return unknown_key_message("training option", key, training_keys(), matlab_hint);
}

void move_training_aliases(YAML::Node& root, const Origin& origin) {
  if (!root.IsMap()) return;
  const YAML::Node& lookup = root;           // const lookups add no keys
  YAML::Node training = lookup["training"];  // missing: undefined (IsMap would throw)
  if (!training.IsDefined() || !training.IsMap()) return;
  YAML::Node key, value;  // rebound with reset(): operator= would overwrite the node
  bool found = false;
  for (auto it = training.begin(); it != training.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == "ValidationData") {
      key.reset(it->first);
      value.reset(it->second);
      found = true;
    }
  if (!found) return;
  YAML::Node data = lookup["data"];
  if (data.IsDefined() && !data.IsNull() && !data.IsMap()) return;  // read_data reports it
  if (!value.IsNull() && !value.IsScalar())
    throw ConfigError(origin.loc(key, value).prefix() + "training.ValidationData must be a folder of class folders " +
                      "(dltrain reads it as data.validation), got '" + node_text(value) + "'");
  if (data.IsDefined() && data.IsMap())
    for (auto it = data.begin(); it != data.end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == "validation")
        throw ConfigError(origin.at(key) + "training.ValidationData and data.validation (line " +
                          std::to_string(origin.loc(it->first).line) +
                          ") both give the validation folder (keep data.validation)");
  if (!data.IsDefined() || !data.IsMap()) root["data"] = YAML::Node(YAML::NodeType::Map);
  YAML::Node target = lookup["data"];  // a new handle: reset() throws on an undefined one
  target["validation"] = value;
  training.remove("ValidationData");
}

}  // namespace dlt::cfg
