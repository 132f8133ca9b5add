// Transfer learning (config section base:, docs/transfer.md): take a trained model (model.bin
// or .onnx), keep its first layers (KeepLayers N, RemoveLast N or KeepUntil name), append the
// config's layers, freeze kept layers up to FreezeUntil (learn-rate factors 0), and copy the
// kept layers' weights into the built Network. Independent of YAML; the commands call it
// after load_config.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "config/config.h"
#include "layers/spec.h"
#include "net/model_file.h"

namespace dlt {

class Network;

// Reads base.model (dltrain model or ONNX), returns the kept base layers followed by
// new_layers; fills base.kept and base.weights. Throws ConfigError naming the section.
NetworkSpec apply_transfer(TransferBase& base, const NetworkSpec& new_layers);
// The same on a loaded config: with a base: section, config.network becomes the kept base
// layers followed by its layers: list. Without one, nothing changes.
void apply_transfer(Config& config);

// Copies every parameter and state of `weights` whose layer, name and shape match a layer of
// net (the kept layers); other layers keep their initialization. Call after init_params.
// Returns how many tensors were copied.
int64_t apply_base_weights(Network& net, const ModelData& weights);

}  // namespace dlt
