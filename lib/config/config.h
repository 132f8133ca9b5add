// Loading a dltrain YAML config (sections layers, data, training; MATLAB option names) into
// typed specs, applying --set overrides, and writing the resolved config back as YAML.
// This and lib/net/model_file.cpp are the only places that see yaml-cpp. Every error is a
// ConfigError with one line "file:line: what (fix)". Schema: docs/config.md.
#pragma once
#include <string>
#include <vector>

#include "config/options.h"
#include "net/spec.h"
#include "onnx/transfer.h"

namespace dlt {

struct Config {
  NetworkSpec network;
  DataOptions data;
  TrainingOptions training;  // resolve_defaults() already applied
  std::string path;          // the file it came from
  // base: (transfer learning). When base.model is set, network holds the kept base layers
  // followed by the layers: list, and base.weights the kept layers' trained tensors; the
  // trainer copies them after init_params with apply_base_weights (onnx/transfer.h).
  TransferBase base;
};

// Reads path, applies overrides ("section.path=value", values parsed as YAML) to the tree,
// converts and validates the structure. Layer options are checked later by the layers.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from YAML text; `origin` names it in messages (used by tests and the model file).
Config load_config_text(const std::string& text, const std::string& origin,
                        const std::vector<std::string>& overrides = {});

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
