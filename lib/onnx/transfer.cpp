// base: -> kept layers + new layers, freezing, and the weight copy after init_params.
#include "onnx/transfer.h"

#include <algorithm>
#include <filesystem>

#include "net/network.h"
#include "onnx/onnx.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt {

namespace {

bool ends_with_onnx(const std::string& p) { return p.size() > 5 && iequals(p.substr(p.size() - 5), ".onnx"); }

int64_t index_of(const NetworkSpec& net, const std::string& name, const std::string& where, const std::string& key) {
  for (size_t i = 0; i < net.layers.size(); ++i)
    if (net.layers[i].name == name) return static_cast<int64_t>(i);
  std::vector<std::string> names;
  for (const auto& l : net.layers) names.push_back(l.name);
  std::string hint = did_you_mean(name, names);
  if (hint.empty()) hint = " (its layers: " + join(names, ", ") + ")";
  throw ConfigError(where + key + " names '" + name + "', which is not a layer of the base model" + hint);
}

}  // namespace

NetworkSpec apply_transfer(TransferBase& base, const NetworkSpec& new_layers) {
  const std::string where = base.loc.prefix() + "base: ";
  std::error_code ec;
  if (!std::filesystem::exists(base.model, ec))
    throw ConfigError(where + "Model '" + base.model + "' does not exist (give a model.bin or .onnx path)");
  ModelData m = ends_with_onnx(base.model) ? import_onnx(base.model, {}) : load_model(base.model);
  const int64_t total = static_cast<int64_t>(m.network.layers.size());
  int ways = (base.keep_layers >= 0) + (base.remove_last >= 0) + !base.keep_until.empty();
  if (ways > 1) throw ConfigError(where + "give only one of KeepLayers, RemoveLast and KeepUntil");
  int64_t keep = total;
  if (base.keep_layers >= 0) keep = base.keep_layers;
  if (base.remove_last >= 0) keep = total - base.remove_last;
  if (!base.keep_until.empty()) keep = index_of(m.network, base.keep_until, where, "KeepUntil") + 1;
  if (keep < 1 || keep > total)
    throw ConfigError(where + "keeps " + std::to_string(keep) + " layers but the base model has " +
                      std::to_string(total) + " (keep at least the imageInput layer)");
  NetworkSpec out;
  out.layers.assign(m.network.layers.begin(), m.network.layers.begin() + keep);
  if (!base.freeze_until.empty()) {
    int64_t last = index_of(out, base.freeze_until, where, "FreezeUntil");
    for (int64_t i = 0; i <= last; ++i) freeze_layer(out.layers[static_cast<size_t>(i)]);
  }
  auto check_new = [&](const LayerSpec& s) {
    if (make_layer(s)->role() == Layer::Role::kInput)
      throw ConfigError(s.loc.prefix() + "layer '" + s.name +
                        "': with base:, the layers: list only adds layers after the kept ones or replaces them "
                        "(remove " +
                        s.type + ")");
  };
  // Replace (MATLAB's replaceLayer): the layers: entry of the same Name takes the kept layer's
  // place, reading its inputs unless it names its own; it starts from fresh weights, unfrozen.
  for (const std::string& name : base.replace) {
    const int64_t i = index_of(out, name, where, "Replace");
    if (i == 0)
      throw ConfigError(where + "Replace names '" + name + "', the input layer (replace the layers after it)");
    auto it = std::find_if(new_layers.layers.begin(), new_layers.layers.end(),
                           [&](const LayerSpec& s) { return s.name == name; });
    if (it == new_layers.layers.end())
      throw ConfigError(where + "Replace names '" + name + "' but layers: has no layer with Name: " + name +
                        " (the layer that takes its place)");
    check_new(*it);
    LayerSpec s = *it;
    if (s.inputs.empty()) s.inputs = out.layers[static_cast<size_t>(i)].inputs;
    out.layers[static_cast<size_t>(i)] = std::move(s);
  }
  for (const LayerSpec& s : new_layers.layers) {
    if (base.replaces(s.name)) continue;
    for (const LayerSpec& k : out.layers)
      if (k.name == s.name)
        throw ConfigError(s.loc.prefix() + "layer '" + s.name +
                          "' has the name of a kept base layer (give it another Name, or list it in base: "
                          "Replace to take that layer's place)");
    check_new(s);
    out.layers.push_back(s);
  }
  base.kept = keep;
  auto weights = std::make_shared<ModelData>();  // the kept layers' tensors only (not the replaced ones')
  auto kept = [&](const NamedTensor& t) {
    return !base.replaces(t.layer) && std::any_of(out.layers.begin(), out.layers.begin() + keep,
                                                  [&](const LayerSpec& l) { return l.name == t.layer; });
  };
  for (auto& t : m.params)
    if (kept(t)) weights->params.push_back(std::move(t));
  for (auto& t : m.states)
    if (kept(t)) weights->states.push_back(std::move(t));
  weights->network.layers.assign(out.layers.begin(), out.layers.begin() + keep);
  base.weights = std::move(weights);
  return out;
}

void apply_transfer(Config& config) {
  if (config.base.model.empty()) return;
  config.network = apply_transfer(config.base, config.network);
}

int64_t apply_base_weights(Network& net, const ModelData& weights) {
  auto find = [](const std::vector<NamedTensor>& list, const std::string& layer,
                 const std::string& name) -> const NamedTensor* {
    for (const auto& t : list)
      if (t.layer == layer && t.name == name) return &t;
    return nullptr;
  };
  int64_t copied = 0;
  auto copy = [&](const NamedTensor* t, const Shape& shape, Tensor& dst, const std::string& layer) {
    if (!t) return;
    if (t->shape != shape)
      throw ModelError("base model: layer '" + layer + "' " + t->name + " is " + t->shape.str() +
                       " but the network needs " + shape.str() + " (did the input size change? keep fewer layers)");
    Tensor h(shape);
    std::copy(t->data.begin(), t->data.end(), h.data());
    dst.copy_from(h);
    ++copied;
  };
  for (size_t i = 0; i < net.size(); ++i) {
    Layer& l = net.layer(i);
    for (Param& p : l.params()) copy(find(weights.params, l.name(), p.name), p.shape, p.value, l.name());
    for (State& s : l.states()) copy(find(weights.states, l.name(), s.name), s.shape, s.value, l.name());
  }
  net.input_layer().refresh_normalization();
  return copied;
}

}  // namespace dlt
