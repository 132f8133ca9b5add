// The environment variables that override run-environment training options (config.h
// apply_environment_overrides). Each keeps the meaning it had before the option existed.
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/error.h"
#include "util/numbers.h"

namespace dlt {

namespace {

struct EnvOverride {
  const char* variable;
  const char* option;  // the training option it overrides
  // Sets the option from the variable's value; returns false for a bad value.
  std::function<bool(const std::string& value, TrainingOptions& o)> apply;
  const char* fix;  // for a bad value
};

const std::vector<EnvOverride>& overrides() {
  using TO = TrainingOptions;
  static const std::vector<EnvOverride> table = {
      {"DLT_CUDA_GRAPH", "CudaGraph",
       [](const std::string& v, TO& o) {
         o.cuda_graph = v == "1";
         return true;
       },
       ""},
      {"DLT_ALLOW_TF32", "AllowTF32",
       [](const std::string& v, TO& o) {
         o.allow_tf32 = v == "1";
         return true;
       },
       ""},
      {"DLT_ALLOW_REDUCED_PRECISION_REDUCTION", "AllowReducedPrecisionReduction",
       [](const std::string& v, TO& o) {
         o.allow_reduced_precision_reduction = v == "1";
         return true;
       },
       ""},
      {"DLT_CONV_ALGO", "ConvolutionAlgorithm",
       [](const std::string& v, TO& o) {
         o.convolution_algorithm = v == "direct" ? "direct" : "auto";
         return true;
       },
       ""},
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
      {"DLT_FUSED_BN_POOL", "FusedBatchNormPooling",
       [](const std::string& v, TO& o) {
         o.fused_batch_norm_pooling = v != "0";
         return true;
       },
       ""},
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
      {"DLT_COMM_TIMING", "CommunicationTiming",
       [](const std::string& v, TO& o) {
         o.communication_timing = v != "0";
         return true;
       },
       ""},
  };
  return table;
}

}  // namespace

void apply_environment_overrides(TrainingOptions& o) {
  for (const EnvOverride& e : overrides()) {
    const char* v = std::getenv(e.variable);
    if (!v || !*v) continue;
    TrainingOptions changed = o;
    if (!e.apply(v, changed))
      throw ConfigError(std::string(e.variable) + " is '" + v + "' (it overrides training." + e.option + "); " + e.fix);
    o = changed;
  }
}

}  // namespace dlt
