// The environment variables that override run-environment training options (config.h
// apply_environment_overrides). Each value is read by the training option's own entry in the
// option table (training_section.cpp), so it takes the same words and checks as the YAML
// (boolean ones util/env.h's spellings); a bad value is one ConfigError naming variable and option.
#include <string>
#include <vector>

#include "config/config.h"
#include "config/sections.h"
#include "util/env.h"
#include "util/error.h"

namespace dlt {

namespace {

const std::string kFlagFix = std::string("set it to ") + kEnvFlagSpellings + ", or unset it";

// "set it to a, b or c, or unset it": a choice option's words (options.h).
template <ChoiceEnum E>
std::string choice_fix() {
  const std::vector<std::string> names = choice_names<E>();
  std::string s = "set it to ";
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s + ", or unset it";
}

struct EnvOverride {
  const char* variable;
  const char* option;  // the training option it overrides, read by its entry in the option table
  std::string fix;     // for a bad value
};

const std::vector<EnvOverride>& overrides() {
  static const std::vector<EnvOverride> table = {
      {"DLT_CUDA_GRAPH", "CudaGraph", kFlagFix},
      {"DLT_ALLOW_TF32", "AllowTF32", kFlagFix},
      {"DLT_ALLOW_REDUCED_PRECISION_REDUCTION", "AllowReducedPrecisionReduction", kFlagFix},
      {"DLT_CUDNN_RUNTIME_COMPILED", "CudnnRuntimeCompiled", kFlagFix},
      {"DLT_CUDA_FUSED_CLIPPED_RELU", "CudaFusedClippedRelu", kFlagFix},
      {"DLT_CONV_ALGO", "ConvolutionAlgorithm", choice_fix<ConvolutionAlgorithm>()},
      {"DLT_CUDNN_ENGINES", "CudnnEngines", choice_fix<CudnnEngines>()},
      {"DLT_BN_KERNELS", "BatchNormKernels", choice_fix<BatchNormKernels>()},
      {"DLT_FUSED_BN_POOL", "FusedBatchNormPooling", kFlagFix},
      {"DLT_CUDNN_WORKSPACE_MB", "CudnnWorkspaceMB", "set it to a number of MiB (e.g. 256), or unset it"},
      {"DLT_BUCKET_MB", "GradientBucketSizeMB", "set it to a positive number of megabytes"},
      {"DLT_COMM_TIMEOUT", "CommunicationTimeout", "set it to a positive number of seconds"},
      {"DLT_COMM_TIMING", "CommunicationTiming", kFlagFix},
  };
  return table;
}

}  // namespace

void apply_environment_overrides(TrainingOptions& o) {
  for (const EnvOverride& e : overrides()) {
    const std::string v = env_text(e.variable);
    if (v.empty()) continue;
    cfg::read_training_value(e.option, v, o, [&](const std::string&, const std::string&) {
      throw ConfigError(std::string(e.variable) + " is '" + v + "' (it overrides training." + e.option + "); " + e.fix);
    });
  }
}

}  // namespace dlt
