// The run-environment training options (CudaGraph, AllowTF32, ConvolutionAlgorithm,
// CudnnWorkspaceMB, Deterministic, FusedConvolution, BatchNormEx, GradientBucketSizeMB,
// CommunicationTimeout, CommunicationTiming): defaults, parsing, one-line errors with
// file:line, the resolved config.yaml, and the environment variables that override them.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "config/config.h"
#include "config_test_util.h"
#include "support/env_var.h"
#include "train/execution.h"
#include "util/error.h"

namespace dlt {

namespace {

using test::EnvVar;
using test::kNet;

const char* const kVariables[] = {"DLT_CUDA_GRAPH",
                                  "DLT_ALLOW_TF32",
                                  "DLT_CONV_ALGO",
                                  "DLT_CUDNN_WORKSPACE_MB",
                                  "DLT_BUCKET_MB",
                                  "DLT_COMM_TIMEOUT",
                                  "DLT_COMM_TIMING",
                                  "DLT_CUDNN_ENGINES",
                                  "DLT_FUSED_BN_POOL",
                                  "DLT_BN_KERNELS",
                                  "DLT_ALLOW_REDUCED_PRECISION_REDUCTION",
                                  "DLT_CUDNN_RUNTIME_COMPILED",
                                  "DLT_CUDA_FUSED_CLIPPED_RELU"};

// Unsets every overriding variable for a scope, so the host's environment cannot leak in.
struct CleanEnvironment {
  std::vector<std::unique_ptr<EnvVar>> vars;
  CleanEnvironment() {
    for (const char* v : kVariables) vars.push_back(std::make_unique<EnvVar>(v, nullptr));
  }
};

Config load(const std::string& training) { return load_config_text(kNet + "training:\n" + training, "cfg.yaml"); }

std::string error_of(const std::string& training) {
  try {
    load(training);
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);  // one line
    return msg;
  }
  return "no error";
}

}  // namespace

TEST_CASE("run environment options: defaults keep today's behaviour", "[config]") {
  CleanEnvironment clean;
  const TrainingOptions o = load("  MaxEpochs: 1\n").training;
  CHECK_FALSE(o.cuda_graph);
  CHECK_FALSE(o.allow_tf32);
  CHECK(o.convolution_algorithm == ConvolutionAlgorithm::kAuto);
  CHECK(o.cudnn_workspace_mb == 1024);
  CHECK_FALSE(o.deterministic);
  CHECK(o.fused_convolution);
  CHECK(o.cudnn_engines == CudnnEngines::kAuto);
  CHECK(o.batch_norm_ex);
  CHECK(o.batch_norm_kernels == BatchNormKernels::kCudnn);
  CHECK(o.gradient_bucket_size_mb == 0);  // auto
  CHECK(o.communication_timeout == 60);
  CHECK_FALSE(o.communication_timing);
  const BackendOptions b = backend_options_for(o);
  CHECK_FALSE(b.allow_tf32);
  CHECK_FALSE(b.direct_convolution);
  CHECK(b.cudnn_workspace_mb == 1024);
  CHECK(b.cudnn_engines == CudnnEngines::kAuto);
  CHECK(b.batch_norm_kernels == BatchNormKernels::kCudnn);
  CHECK(comm_settings_for(o).timeout.count() == 60000);
}

TEST_CASE(
    "run environment options: CudnnEngines exhaustive, BatchNormKernels, AllowReducedPrecisionReduction, "
    "CudnnRuntimeCompiled, by option and by variable",
    "[config]") {
  CleanEnvironment clean;
  {
    const Config c = load(
        "  CudnnEngines: exhaustive\n  BatchNormKernels: dltrain\n  AllowReducedPrecisionReduction: true\n"
        "  CudnnRuntimeCompiled: false\n  CudaFusedClippedRelu: true\n");
    const BackendOptions b = backend_options_for(c.training);
    CHECK(b.cudnn_engines == CudnnEngines::kExhaustive);
    CHECK(b.batch_norm_kernels == BatchNormKernels::kDltrain);
    CHECK(b.allow_reduced_precision_reduction);
    CHECK_FALSE(b.cudnn_runtime_compiled);
    CHECK_FALSE(backend_options_for(load("  MaxEpochs: 1\n").training).allow_reduced_precision_reduction);
    CHECK(backend_options_for(load("  MaxEpochs: 1\n").training).cudnn_runtime_compiled);  // the default
    CHECK(b.cuda_fused_clipped_relu);
    CHECK_FALSE(backend_options_for(load("  MaxEpochs: 1\n").training).cuda_fused_clipped_relu);
    CHECK(dump_config(c).find("CudaFusedClippedRelu: true") != std::string::npos);
    const std::string yaml = dump_config(c);
    CHECK(yaml.find("CudnnRuntimeCompiled: false") != std::string::npos);
    CHECK(yaml.find("AllowReducedPrecisionReduction: true") != std::string::npos);
    CHECK(yaml.find("CudnnEngines: exhaustive") != std::string::npos);
    CHECK(yaml.find("BatchNormKernels: dltrain") != std::string::npos);
  }
  {
    EnvVar engines("DLT_CUDNN_ENGINES", "exhaustive"), kernels("DLT_BN_KERNELS", "dltrain"),
        reduced("DLT_ALLOW_REDUCED_PRECISION_REDUCTION", "1"), compiled("DLT_CUDNN_RUNTIME_COMPILED", "0"),
        clip("DLT_CUDA_FUSED_CLIPPED_RELU", "1");
    const BackendOptions b =
        backend_options_for(load("  BatchNormKernels: cudnn\n  CudnnRuntimeCompiled: true\n").training);
    CHECK_FALSE(b.cudnn_runtime_compiled);  // the variable overrides the option
    CHECK(b.cuda_fused_clipped_relu);
    CHECK(b.allow_reduced_precision_reduction);
    CHECK(b.cudnn_engines == CudnnEngines::kExhaustive);
    CHECK(b.batch_norm_kernels == BatchNormKernels::kDltrain);  // the variable overrides the option
  }
  CHECK(error_of("  BatchNormKernels: own\n") ==
        "cfg.yaml:9: training.BatchNormKernels must be one of cudnn, dltrain, got 'own'");
  {
    EnvVar kernels("DLT_BN_KERNELS", "cuda");
    CHECK(error_of("  MaxEpochs: 1\n") ==
          "DLT_BN_KERNELS is 'cuda' (it overrides training.BatchNormKernels); set it to cudnn or dltrain, or unset it");
  }
}

TEST_CASE("run environment options: read, handed on, and written to the resolved config", "[config]") {
  CleanEnvironment clean;
  const Config c = load(
      "  CudaGraph: true\n  AllowTF32: true\n  ConvolutionAlgorithm: Direct\n  CudnnWorkspaceMB: 256\n"
      "  Deterministic: true\n  FusedConvolution: false\n  CudnnEngines: legacy\n  BatchNormEx: false\n"
      "  GradientBucketSizeMB: 4\n  CommunicationTimeout: Inf\n  CommunicationTiming: true\n");
  const TrainingOptions& o = c.training;
  CHECK(o.cuda_graph);
  CHECK(o.convolution_algorithm == ConvolutionAlgorithm::kDirect);
  CHECK(std::isinf(o.communication_timeout));
  const BackendOptions b = backend_options_for(o);
  CHECK(b.allow_tf32);
  CHECK(b.direct_convolution);
  CHECK(b.cudnn_workspace_mb == 256);
  CHECK(b.deterministic);
  CHECK_FALSE(b.fused_convolution);
  CHECK(b.cudnn_engines == CudnnEngines::kLegacy);
  CHECK_FALSE(b.batch_norm_ex);
  CHECK(comm_settings_for(o).report_timing);
  const std::string yaml = dump_config(c);
  for (const char* line :
       {"CudaGraph: true", "AllowTF32: true", "ConvolutionAlgorithm: direct", "CudnnWorkspaceMB: 256",
        "Deterministic: true", "FusedConvolution: false", "CudnnEngines: legacy", "BatchNormEx: false",
        "GradientBucketSizeMB: 4", "CommunicationTimeout: Inf", "CommunicationTiming: true"}) {
    INFO(line);
    CHECK(yaml.find(line) != std::string::npos);
  }
  const Config back = load_config_text(yaml, "back.yaml");  // the resolved config loads back the same
  CHECK(dump_config(back) == yaml);
  const std::string defaults = dump_config(load("  MaxEpochs: 1\n"));
  CHECK(defaults.find("GradientBucketSizeMB: auto") != std::string::npos);
  CHECK(defaults.find("CommunicationTimeout: 60") != std::string::npos);
}

TEST_CASE("run environment options: bad values are one line with file:line", "[config]") {
  CleanEnvironment clean;  // kNet is 7 lines and "training:" line 8: the option is on line 9
  CHECK(error_of("  CudaGraph: sometimes\n") ==
        "cfg.yaml:9: training.CudaGraph must be true or false, got 'sometimes'");
  CHECK(error_of("  ConvolutionAlgorithm: winograd\n") ==
        "cfg.yaml:9: training.ConvolutionAlgorithm must be one of auto, direct, got 'winograd'");
  CHECK(error_of("  CudnnWorkspaceMB: -1\n") ==
        "cfg.yaml:9: training.CudnnWorkspaceMB must be an integer >= 0 (MiB), got '-1'");
  CHECK(error_of("  GradientBucketSizeMB: 0\n") ==
        "cfg.yaml:9: training.GradientBucketSizeMB must be auto or a positive number of megabytes, got '0'");
  CHECK(error_of("  CommunicationTimeout: -5\n") ==
        "cfg.yaml:9: training.CommunicationTimeout must be a positive number of seconds or Inf, got '-5'");
  CHECK(error_of("  Deterministic: 2\n") == "cfg.yaml:9: training.Deterministic must be true or false, got '2'");
  CHECK(error_of("  CudnnEngines: fastest\n") ==
        "cfg.yaml:9: training.CudnnEngines must be one of auto, legacy, graph, exhaustive, got 'fastest'");
}

TEST_CASE("run environment options: a set environment variable overrides the option", "[config]") {
  CleanEnvironment clean;
  const std::string training = "  CudaGraph: false\n  ConvolutionAlgorithm: auto\n  CommunicationTimeout: 30\n";
  {
    EnvVar graph("DLT_CUDA_GRAPH", "1"), tf32("DLT_ALLOW_TF32", "1"), algo("DLT_CONV_ALGO", "direct"),
        ws("DLT_CUDNN_WORKSPACE_MB", "128"), bucket("DLT_BUCKET_MB", "0.000122"), timeout("DLT_COMM_TIMEOUT", "2.5"),
        timing("DLT_COMM_TIMING", "1"), engines("DLT_CUDNN_ENGINES", "legacy");
    const Config c = load(training);
    const TrainingOptions& o = c.training;
    CHECK(o.cudnn_engines == CudnnEngines::kLegacy);
    CHECK(o.cuda_graph);
    CHECK(o.allow_tf32);
    CHECK(o.convolution_algorithm == ConvolutionAlgorithm::kDirect);
    CHECK(o.cudnn_workspace_mb == 128);
    CHECK(o.gradient_bucket_size_mb == 0.000122);
    CHECK(comm_settings_for(o).timeout.count() == 2500);
    CHECK(o.communication_timing);
    const std::string yaml = dump_config(c);  // the run's config.yaml says what it used
    CHECK(yaml.find("CudaGraph: true") != std::string::npos);
    CHECK(yaml.find("CommunicationTimeout: 2.5") != std::string::npos);
  }
  {  // every boolean variable takes util/env.h's spellings, in both directions
    EnvVar graph("DLT_CUDA_GRAPH", "yes"), tf32("DLT_ALLOW_TF32", "on"), timing("DLT_COMM_TIMING", "false"),
        fused("DLT_FUSED_BN_POOL", "off"), reduced("DLT_ALLOW_REDUCED_PRECISION_REDUCTION", "TRUE"),
        algo("DLT_CONV_ALGO", "auto");
    const TrainingOptions o = load(
                                  "  CudaGraph: false\n  CommunicationTiming: true\n  ConvolutionAlgorithm: direct\n"
                                  "  FusedBatchNormPooling: true\n")
                                  .training;
    CHECK(o.cuda_graph);
    CHECK(o.allow_tf32);
    CHECK(o.allow_reduced_precision_reduction);
    CHECK_FALSE(o.communication_timing);
    CHECK_FALSE(o.fused_batch_norm_pooling);
    CHECK(o.convolution_algorithm == ConvolutionAlgorithm::kAuto);
  }
  {  // empty: as if unset
    EnvVar graph("DLT_CUDA_GRAPH", "");
    CHECK(load("  CudaGraph: true\n").training.cuda_graph);
  }
  {  // huge timeouts are capped where they are used
    EnvVar timeout("DLT_COMM_TIMEOUT", "inf");
    const auto capped = static_cast<int64_t>(kMaxCommTimeoutSeconds * 1000);
    CHECK(comm_settings_for(load("  MaxEpochs: 1\n").training).timeout.count() == capped);
  }
}

TEST_CASE("run environment options: a bad environment value names the variable and the option", "[config]") {
  CleanEnvironment clean;
  {
    EnvVar timeout("DLT_COMM_TIMEOUT", "-1");
    CHECK(error_of("  MaxEpochs: 1\n") ==
          "DLT_COMM_TIMEOUT is '-1' (it overrides training.CommunicationTimeout); set it to a positive number of "
          "seconds");
  }
  {
    EnvVar bucket("DLT_BUCKET_MB", "lots");
    CHECK(error_of("  MaxEpochs: 1\n") ==
          "DLT_BUCKET_MB is 'lots' (it overrides training.GradientBucketSizeMB); set it to a positive number of "
          "megabytes");
  }
  {
    EnvVar ws("DLT_CUDNN_WORKSPACE_MB", "1.5");
    CHECK(error_of("  MaxEpochs: 1\n") ==
          "DLT_CUDNN_WORKSPACE_MB is '1.5' (it overrides training.CudnnWorkspaceMB); set it to a number of MiB "
          "(e.g. 256), or unset it");
  }
  {  // a boolean variable with a value that is none of the spellings
    EnvVar graph("DLT_CUDA_GRAPH", "2");
    CHECK(error_of("  MaxEpochs: 1\n") ==
          "DLT_CUDA_GRAPH is '2' (it overrides training.CudaGraph); set it to 1 or 0 (true/false, on/off, yes/no), "
          "or unset it");
  }
  {
    EnvVar fused("DLT_FUSED_BN_POOL", "disabled");
    CHECK(error_of("  MaxEpochs: 1\n") ==
          "DLT_FUSED_BN_POOL is 'disabled' (it overrides training.FusedBatchNormPooling); set it to 1 or 0 "
          "(true/false, on/off, yes/no), or unset it");
  }
  {
    EnvVar algo("DLT_CONV_ALGO", "winograd");
    CHECK(error_of("  MaxEpochs: 1\n") ==
          "DLT_CONV_ALGO is 'winograd' (it overrides training.ConvolutionAlgorithm); set it to auto or direct, or "
          "unset it");
  }
  {
    EnvVar engines("DLT_CUDNN_ENGINES", "fastest");
    CHECK(error_of("  MaxEpochs: 1\n") ==
          "DLT_CUDNN_ENGINES is 'fastest' (it overrides training.CudnnEngines); set it to auto, legacy, graph or "
          "exhaustive, or "
          "unset it");
  }
}

}  // namespace dlt
