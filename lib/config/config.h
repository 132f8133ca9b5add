// Loading a dltrain YAML config (sections layers, data, training, base; MATLAB option names)
// into typed specs, applying --set overrides and the environment variables that override
// training options, and writing the resolved config back as YAML. lib/config is the only
// place that sees yaml-cpp (model files hold YAML text written and read by the functions
// below). Every error is a ConfigError with one line "file:line: what (fix)", or for an
// environment variable "VARIABLE is 'value' (...)". Schema: docs/config.md.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/options.h"
#include "layers/spec.h"

namespace dlt {

// base: (transfer learning, docs/transfer.md), as the config gives it. lib/config only reads
// it; apply_transfer (onnx/transfer.h) loads the model and fills kept and weights.
struct ModelData;
struct TransferBase {
  std::string model;                         // model.bin or .onnx; empty: no transfer
  int64_t keep_layers = -1;                  // keep the first N layers
  int64_t remove_last = -1;                  // keep all but the last N (MATLAB's layers(1:end-N))
  std::string keep_until;                    // keep up to and including this layer
  std::string freeze_until;                  // freeze kept layers up to and including this one
  std::vector<std::string> replace;          // kept layers that the layers: entry of the same Name takes the
                                             // place of (MATLAB's replaceLayer)
  SourceLoc loc;                             // the base: section, for messages
  int64_t kept = 0;                          // filled by apply_transfer: layers taken from the base
  std::shared_ptr<const ModelData> weights;  // filled by apply_transfer: the base model

  bool replaces(const std::string& layer) const {
    return std::find(replace.begin(), replace.end(), layer) != replace.end();
  }
};

struct Config {
  NetworkSpec network;
  DataOptions data;
  TrainingOptions training;  // resolve_defaults() already applied
  std::string path;          // the file it came from
  // base: (transfer learning). After apply_transfer (onnx/transfer.h), network holds the kept
  // base layers followed by the layers: list, and base.weights the kept layers' trained
  // tensors; the trainer copies them after init_params with apply_base_weights. load_config
  // leaves network as the layers: list (it reads no model files).
  TransferBase base;
  // One line each ("cfg.yaml:12: training.X has no effect: why (fix)") for options written but
  // not used by this run where MATLAB accepts them too; dltrain train logs them.
  std::vector<std::string> warnings;
};

// The network a run trains: network with training.Loss (NetworkSpec::loss; none: unset), so
// that a network without an output layer gets the loss's (Network::build).
NetworkSpec network_for_training(const Config& c);

// Reads path, applies overrides ("section.path=value", values parsed as YAML) to the tree,
// converts and validates the structure. Layer options are checked later by the layers.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from YAML text; `origin` names it in messages (used by tests and the model file).
Config load_config_text(const std::string& text, const std::string& origin,
                        const std::vector<std::string>& overrides = {});

// Overrides the run-environment training options from environment variables that are set
// and not empty (docs/config.md "Run environment"): DLT_CUDA_GRAPH=1 (CudaGraph),
// DLT_ALLOW_TF32=1 (AllowTF32), DLT_ALLOW_REDUCED_PRECISION_REDUCTION=1
// (AllowReducedPrecisionReduction), DLT_CUDNN_RUNTIME_COMPILED=1 (CudnnRuntimeCompiled),
// DLT_CUDA_FUSED_CLIPPED_RELU=1 (CudaFusedClippedRelu),
// DLT_CONV_ALGO=direct (ConvolutionAlgorithm),
// DLT_CUDNN_WORKSPACE_MB (CudnnWorkspaceMB), DLT_CUDNN_ENGINES (CudnnEngines),
// DLT_BN_KERNELS (BatchNormKernels), DLT_FUSED_BN_POOL (FusedBatchNormPooling, unless 0),
// DLT_BUCKET_MB (GradientBucketSizeMB),
// DLT_COMM_TIMEOUT (CommunicationTimeout), DLT_COMM_TIMING (CommunicationTiming, unless 0).
// load_config applies them, so the resolved config.yaml shows what the run used. Throws
// ConfigError naming the variable and the option for a bad value.
void apply_environment_overrides(TrainingOptions& options);

// The resolved config as YAML (every option written out); loads back to an equal Config.
std::string dump_config(const Config& config);

// The network alone ("layers:" and its list), as stored in model files.
std::string network_spec_to_yaml(const NetworkSpec& net);
NetworkSpec network_spec_from_yaml(const std::string& text, const std::string& origin);

// The training: section alone (a map of trainingOptions), as stored in model files.
std::string training_options_to_yaml(const TrainingOptions& opts);

// The canonical layer type names lib/config accepts (matched case-insensitively).
const std::vector<std::string>& config_layer_types();

}  // namespace dlt
