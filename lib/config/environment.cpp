// The environment variables that override run-environment training options (config.h
// apply_environment_overrides). Boolean ones take util/env.h's spellings (1/0, true/false,
// on/off, yes/no); a bad value of any of them is one ConfigError naming variable and option.
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/env.h"
#include "util/error.h"
#include "util/numbers.h"

namespace dlt {

namespace {

const std::string kFlagFix = std::string("set it to ") + kEnvFlagSpellings + ", or unset it";

struct EnvOverride {
  const char* variable;
  const char* option;  // the training option it overrides
  // Sets the option from the variable's value; returns false for a bad value.
  std::function<bool(const std::string& value, TrainingOptions& o)> apply;
  std::string fix;  // for a bad value
};

// A boolean variable setting one boolean option.
std::function<bool(const std::string&, TrainingOptions&)> flag(bool TrainingOptions::*member) {
  return [member](const std::string& v, TrainingOptions& o) { return parse_bool(v, &(o.*member)); };
}

const std::vector<EnvOverride>& overrides() {
  using TO = TrainingOptions;
  static const std::vector<EnvOverride> table = {
      {"DLT_CUDA_GRAPH", "CudaGraph", flag(&TO::cuda_graph), kFlagFix},
      {"DLT_ALLOW_TF32", "AllowTF32", flag(&TO::allow_tf32), kFlagFix},
      {"DLT_ALLOW_REDUCED_PRECISION_REDUCTION", "AllowReducedPrecisionReduction",
       flag(&TO::allow_reduced_precision_reduction), kFlagFix},
      {"DLT_CONV_ALGO", "ConvolutionAlgorithm",
       [](const std::string& v, TO& o) {
         if (v != "auto" && v != "direct") return false;
         o.convolution_algorithm = v;
         return true;
       },
       "set it to auto or direct, or unset it"},
      {"DLT_CUDNN_ENGINES", "CudnnEngines",
       [](const std::string& v, TO& o) {
         if (v != "auto" && v != "legacy" && v != "graph" && v != "exhaustive") return false;
         o.cudnn_engines = v;
         return true;
       },
       "set it to auto, legacy, graph or exhaustive, or unset it"},
      {"DLT_BN_KERNELS", "BatchNormKernels",
       [](const std::string& v, TO& o) {
         if (v != "cudnn" && v != "dltrain") return false;
         o.batch_norm_kernels = v;
         return true;
       },
       "set it to cudnn or dltrain, or unset it"},
      {"DLT_FUSED_BN_POOL", "FusedBatchNormPooling", flag(&TO::fused_batch_norm_pooling), kFlagFix},
      {"DLT_CUDNN_WORKSPACE_MB", "CudnnWorkspaceMB",
       [](const std::string& v, TO& o) { return parse_int(v, &o.cudnn_workspace_mb) && o.cudnn_workspace_mb >= 0; },
       "set it to a number of MiB (e.g. 256), or unset it"},
      {"DLT_BUCKET_MB", "GradientBucketSizeMB",
       [](const std::string& v, TO& o) {
         return parse_double(v, &o.gradient_bucket_size_mb) && o.gradient_bucket_size_mb > 0;
       },
       "set it to a positive number of megabytes"},
      {"DLT_COMM_TIMEOUT", "CommunicationTimeout",
       [](const std::string& v, TO& o) {
         o.communication_timeout = std::numeric_limits<double>::infinity();
         return is_inf_text(v) || (parse_double(v, &o.communication_timeout) && o.communication_timeout > 0);
       },
       "set it to a positive number of seconds"},
      {"DLT_COMM_TIMING", "CommunicationTiming", flag(&TO::communication_timing), kFlagFix},
  };
  return table;
}

}  // namespace

void apply_environment_overrides(TrainingOptions& o) {
  for (const EnvOverride& e : overrides()) {
    const std::string v = env_text(e.variable);
    if (v.empty()) continue;
    TrainingOptions changed = o;
    if (!e.apply(v, changed))
      throw ConfigError(std::string(e.variable) + " is '" + v + "' (it overrides training." + e.option + "); " + e.fix);
    o = changed;
  }
}

}  // namespace dlt
