// load_config / dump_config: file -> YAML tree -> --set overrides -> typed sections, and back.
#include "config/config.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/sections.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt {

namespace {

const std::vector<std::string> kTopLevel = {"layers", "data", "training", "base"};
const std::vector<std::string> kBaseKeys = {"Model", "KeepLayers", "RemoveLast", "KeepUntil", "FreezeUntil", "Replace"};

// Replace: a layer name or a list of them.
void read_replace(const cfg::Entry& e, const SourceLoc& at, TransferBase& b) {
  std::vector<YAML::Node> items;
  if (e.value.IsScalar())
    items.push_back(e.value);
  else if (e.value.IsSequence())
    for (const YAML::Node& n : e.value) items.push_back(n);
  for (const YAML::Node& n : items) {
    if (!n.IsScalar() || n.Scalar().empty())
      throw ConfigError(at.prefix() + "base: Replace must be a layer name or a list of layer names, got '" +
                        cfg::node_text(e.value) + "'");
    if (b.replaces(n.Scalar())) throw ConfigError(at.prefix() + "base: Replace names '" + n.Scalar() + "' twice");
    b.replace.push_back(n.Scalar());
  }
  if (b.replace.empty()) throw ConfigError(at.prefix() + "base: Replace needs at least one layer name");
}

// base: {Model: path, KeepLayers: N | RemoveLast: N | KeepUntil: name, FreezeUntil: name,
//        Replace: name or [names]}
void read_base(const YAML::Node& node, const cfg::Origin& origin, TransferBase& b) {
  b.loc = origin.loc(node);
  for (const cfg::Entry& e : cfg::map_entries(node, origin, "base")) {
    SourceLoc at = origin.loc(e.key_node, e.value);
    if (e.key == "Replace") {
      read_replace(e, at, b);
      continue;
    }
    if (!e.value.IsScalar() || e.value.Scalar().empty())
      throw ConfigError(at.prefix() + "base: " + e.key + " must be a single value, got '" + cfg::node_text(e.value) +
                        "'");
    const std::string& v = e.value.Scalar();
    auto count = [&](int64_t* out) {
      if (!parse_int(v, out) || *out < 0)
        throw ConfigError(at.prefix() + "base: " + e.key + " must be a whole number >= 0, got '" + v + "'");
    };
    if (e.key == "Model")
      b.model = v;
    else if (e.key == "KeepLayers")
      count(&b.keep_layers);
    else if (e.key == "RemoveLast")
      count(&b.remove_last);
    else if (e.key == "KeepUntil")
      b.keep_until = v;
    else if (e.key == "FreezeUntil")
      b.freeze_until = v;
    else {
      std::string hint = did_you_mean(e.key, kBaseKeys);
      throw ConfigError(at.prefix() + "unknown base: key '" + e.key + "'" +
                        (hint.empty() ? " (keys: " + join(kBaseKeys, ", ") + ")" : hint));
    }
  }
  if (b.model.empty())
    throw ConfigError(b.loc.prefix() + "base: needs Model: (the model.bin or .onnx file to start from)");
}

Config convert(YAML::Node root, const std::string& origin_name, const std::vector<std::string>& overrides) {
  cfg::Origin origin(origin_name);
  if (root.IsDefined() && !root.IsNull() && !root.IsMap())
    throw ConfigError(origin.at(root) + "a config is a map with the sections layers, data and training, got '" +
                      cfg::node_text(root) + "'");
  cfg::move_training_aliases(root, origin);  // the file's; --set redirects its own
  // --set on training and data first (a generator's output layer follows training.Loss), then
  // the generator, then --set on layers, which names generated layers.
  std::vector<std::string> on_layers, on_rest;
  for (const auto& ov : overrides) {
    const std::string section = ov.substr(0, ov.find_first_of(".="));
    (section == "layers" ? on_layers : on_rest).push_back(ov);
  }
  cfg::apply_overrides(root, on_rest, origin);
  cfg::expand_layer_generators(root, origin);
  cfg::apply_overrides(root, on_layers, origin);
  Config c;
  c.path = origin_name;
  YAML::Node layers, data, training, base;
  if (root.IsMap()) {
    for (const cfg::Entry& e : cfg::map_entries(root, origin, "the config")) {
      if (e.key == "layers")
        layers = e.value;
      else if (e.key == "data")
        data = e.value;
      else if (e.key == "training")
        training = e.value;
      else if (e.key == "base")
        base = e.value;
      else {
        std::string hint = did_you_mean(e.key, kTopLevel);
        throw ConfigError(origin.at(e.key_node) + "unknown section '" + e.key + "'" +
                          (hint.empty() ? " (sections: layers, data, training)" : hint));
      }
    }
  }
  c.network = cfg::read_layers(layers, origin, base.IsDefined() && !base.IsNull());
  if (base.IsDefined() && !base.IsNull()) {
    read_base(base, origin, c.base);
  }
  cfg::read_data(data, origin, c.data);
  cfg::read_training(training, origin, c.training);
  c.training.resolve_defaults();
  cfg::check_option_use(training, origin, c.data, c.training, c.warnings);
  apply_environment_overrides(c.training);
  return c;
}

}  // namespace

NetworkSpec network_for_training(const Config& c) {
  NetworkSpec spec = c.network;
  if (c.training.loss != LossName::kNone) {
    spec.loss = to_string(c.training.loss);
    spec.loss_loc.file = c.path;
  }
  return spec;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(path + ": is a directory, not a config file (give the .yaml file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    throw ConfigError(path + ": cannot read the config file (" + std::strerror(err) + "; check the path)");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return load_config_text(ss.str(), path, overrides);
}

Config load_config_text(const std::string& text, const std::string& origin, const std::vector<std::string>& overrides) {
  return convert(cfg::parse_yaml(text, origin), origin, overrides);
}

std::string dump_config(const Config& c) {
  YAML::Emitter e;
  e << YAML::Comment("dltrain resolved config (every option written out); load it with dltrain train");
  e << YAML::BeginMap;
  NetworkSpec added = c.network;
  if (!c.base.model.empty()) {
    // The base layers come from the model again (KeepLayers, with any freezing); layers: is
    // the list appended after them.
    e << YAML::Key << "base" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "Model" << YAML::Value << c.base.model;
    e << YAML::Key << "KeepLayers" << YAML::Value << c.base.kept;
    if (!c.base.freeze_until.empty()) e << YAML::Key << "FreezeUntil" << YAML::Value << c.base.freeze_until;
    if (!c.base.replace.empty()) e << YAML::Key << "Replace" << YAML::Value << YAML::Flow << c.base.replace;
    e << YAML::EndMap;
    // layers: the replacements (taken from their places among the kept layers), then the rest.
    added.layers.clear();
    for (int64_t i = 0; i < c.base.kept; ++i) {
      const LayerSpec& l = c.network.layers[static_cast<size_t>(i)];
      if (c.base.replaces(l.name)) added.layers.push_back(l);
    }
    added.layers.insert(added.layers.end(), c.network.layers.begin() + c.base.kept, c.network.layers.end());
  }
  e << YAML::Key << "layers" << YAML::Value;
  cfg::write_layers(e, added);
  e << YAML::Key << "data" << YAML::Value;
  cfg::write_data(e, c.data);
  e << YAML::Key << "training" << YAML::Value;
  cfg::write_training(e, c.training);
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

std::string network_spec_to_yaml(const NetworkSpec& net) {
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "layers" << YAML::Value;
  cfg::write_layers(e, net);
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

NetworkSpec network_spec_from_yaml(const std::string& text, const std::string& origin_name) {
  YAML::Node root = cfg::parse_yaml(text, origin_name);
  cfg::Origin origin(origin_name);
  YAML::Node layers;
  if (root.IsMap()) {
    for (const cfg::Entry& e : cfg::map_entries(root, origin, "the network"))
      if (e.key == "layers")
        layers = e.value;
      else
        throw ConfigError(origin.at(e.key_node) + "unexpected key '" + e.key + "' in a network spec (only layers:)");
  } else if (root.IsSequence()) {
    layers = root;  // a bare list of layers
  }
  return cfg::read_layers(layers, origin);
}

std::string training_options_to_yaml(const TrainingOptions& opts) {
  YAML::Emitter e;
  cfg::write_training(e, opts);
  return std::string(e.c_str()) + "\n";
}

const std::vector<std::string>& config_layer_types() { return cfg::known_layer_types(); }

}  // namespace dlt
