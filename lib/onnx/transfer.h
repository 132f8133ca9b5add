// Transfer learning (config section base:, docs/transfer.md): take a trained model (model.bin
// or .onnx), keep its first layers (KeepLayers N, RemoveLast N or KeepUntil name), append the
// config's layers, freeze kept layers up to FreezeUntil (learn-rate factors 0), and copy the
// kept layers' weights into the built Network. Independent of YAML; lib/config calls it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "net/model_file.h"
#include "net/spec.h"

namespace dlt {

class Network;

struct TransferBase {
  std::string model;            // model.bin or .onnx; empty: no transfer
  int64_t keep_layers = -1;     // keep the first N layers
  int64_t remove_last = -1;     // keep all but the last N (MATLAB's layers(1:end-N))
  std::string keep_until;       // keep up to and including this layer
  std::string freeze_until;     // freeze kept layers up to and including this one
  SourceLoc loc;                // the base: section, for messages
  int64_t kept = 0;             // filled by apply_transfer: layers taken from the base
  std::shared_ptr<const ModelData> weights;  // filled by apply_transfer: the base model
};

// Reads base.model (dltrain model or ONNX), returns the kept base layers followed by
// new_layers; fills base.kept and base.weights. Throws ConfigError naming the section.
NetworkSpec apply_transfer(TransferBase& base, const NetworkSpec& new_layers);

// Copies every parameter and state of `weights` whose layer, name and shape match a layer of
// net (the kept layers); other layers keep their initialization. Call after init_params.
// Returns how many tensors were copied.
int64_t apply_base_weights(Network& net, const ModelData& weights);

}  // namespace dlt
