// The layers: section <-> NetworkSpec. Checks structure only (types, names, Inputs, value
// shapes); each layer class checks its own options later (LayerSpec getters, check_all_used).
#include <map>

#include "config/sections.h"
#include "layers/layer.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt::cfg {

const std::vector<std::string>& known_layer_types() {
  static const std::vector<std::string> types = layer_types();  // the registry's one list
  return types;
}

std::string canonical_layer_type(const std::string& type) {
  for (const auto& t : known_layer_types())
    if (iequals(t, type)) return t;
  return "";
}

namespace {

// The entry's key that is `word` exactly; throws for a case-only variant ("name:").
const Entry* find_key(const std::vector<Entry>& entries, const std::string& word, const Origin& origin) {
  const Entry* found = nullptr;
  for (const auto& e : entries) {
    if (e.key == word)
      found = &e;
    else if (iequals(e.key, word))
      throw ConfigError(origin.at(e.key_node) + "unknown layer key '" + e.key + "' (did you mean '" + word + "'?)");
  }
  return found;
}

std::string scalar_text(const Entry& e, const Origin& origin, const std::string& layer, const std::string& expect) {
  if (!e.value.IsScalar() || e.value.Scalar().empty())
    throw ConfigError(origin.loc(e.key_node, e.value).prefix() + layer + ": " + e.key + " must be " + expect +
                      ", got '" + node_text(e.value) + "'");
  return e.value.Scalar();
}

std::string type_of(const std::vector<Entry>& entries, const YAML::Node& item, const Origin& origin,
                    const std::string& layer) {
  const Entry* t = find_key(entries, "type", origin);
  if (!t)
    throw ConfigError(origin.at(item) + layer + " has no type (add type: followed by one of " +
                      join(known_layer_types(), ", ") + ")");
  std::string raw = scalar_text(*t, origin, layer, "a layer type such as convolution2d");
  std::string canon = canonical_layer_type(raw);
  if (!canon.empty()) return canon;
  std::string hint;
  if (raw.size() > 5 && iequals(raw.substr(raw.size() - 5), "layer")) {
    std::string stem = canonical_layer_type(raw.substr(0, raw.size() - 5));
    if (!stem.empty()) hint = " (the type is MATLAB's function name without 'Layer': write '" + stem + "')";
  }
  if (hint.empty()) hint = did_you_mean(raw, known_layer_types());
  if (hint.empty()) hint = " (known types: " + join(known_layer_types(), ", ") + ")";
  throw ConfigError(origin.loc(t->key_node, t->value).prefix() + layer + ": unknown layer type '" + raw + "'" + hint);
}

SpecValue option_value(const Entry& e, const Origin& origin, const std::string& layer) {
  SpecValue v;
  v.loc = origin.loc(e.key_node, e.value);
  auto fail = [&](const std::string& why) {
    throw ConfigError(v.loc.prefix() + layer + ": option " + e.key + " " + why + ", got '" + node_text(e.value) + "'");
  };
  if (e.value.IsScalar()) {
    v.items = {e.value.Scalar()};
  } else if (e.value.IsSequence()) {
    v.is_list = true;
    for (const auto& n : list_items(e.value)) {  // [32 32 3] counts as [32, 32, 3]
      if (!n.IsScalar()) fail("must be a number, a word or a list of them (no nested lists or maps)");
      v.items.push_back(n.Scalar());
    }
  } else if (e.value.IsMap()) {
    fail("must be a number, a word or a list of them (nested maps are not layer options)");
  } else {
    fail("has no value (write a value after the colon or remove the line)");
  }
  return v;
}

}  // namespace

std::vector<std::string> layer_names(const YAML::Node& layers) {
  std::vector<std::string> names;
  std::map<std::string, int> count;
  if (!layers.IsSequence()) return names;
  for (const auto& item : layers) {
    std::string name, type;
    if (item.IsMap()) {
      for (const auto& kv : item) {
        if (!kv.first.IsScalar() || !kv.second.IsScalar()) continue;
        if (kv.first.Scalar() == "Name") name = kv.second.Scalar();
        if (kv.first.Scalar() == "type") type = kv.second.Scalar();
      }
    }
    if (name.empty()) {
      std::string canon = canonical_layer_type(type);
      if (canon.empty()) canon = type;
      name = canon + "_" + std::to_string(++count[canon]);
    }
    names.push_back(name);
  }
  return names;
}

NetworkSpec read_layers(const YAML::Node& node, const Origin& origin, bool after_base) {
  if (!node.IsDefined() || node.IsNull())
    throw ConfigError(origin.file() + ": no layers (add a layers: section listing the network's layers)");
  if (!node.IsSequence() || node.size() == 0)
    throw ConfigError(origin.at(node) + "layers must be a non-empty list of entries like '- {type: relu}', got '" +
                      node_text(node) + "'");
  NetworkSpec net;
  std::map<std::string, int> unnamed_count;
  std::map<std::string, size_t> index_of;  // name -> layer index
  std::vector<std::vector<const Entry*>> inputs_entry;
  std::vector<std::vector<Entry>> all_entries;
  size_t i = 0;
  for (const auto& item : node) {
    std::string layer = "layer " + std::to_string(++i);
    all_entries.push_back(map_entries(item, origin, layer));
    const auto& entries = all_entries.back();
    LayerSpec s;
    s.loc = origin.loc(item);
    s.type = type_of(entries, item, origin, layer);
    if (const Entry* n = find_key(entries, "Name", origin)) {
      s.name = scalar_text(*n, origin, layer, "a non-empty name");
      s.loc = origin.loc(n->key_node, n->value);
    } else {
      s.name = s.type + "_" + std::to_string(++unnamed_count[s.type]);
    }
    auto [it, fresh] = index_of.emplace(s.name, net.layers.size());
    if (!fresh) {
      const LayerSpec& other = net.layers[it->second];
      std::string other_at = other.loc.line > 0 ? ", line " + std::to_string(other.loc.line) : "";
      throw ConfigError(s.loc.prefix() + layer + " (" + s.type + ") is named '" + s.name + "', which layer " +
                        std::to_string(it->second + 1) + " (" + other.type + other_at +
                        ") already uses (give each layer a unique Name)");
    }
    layer = "layer '" + s.name + "' (" + s.type + ")";
    for (const auto& e : entries) {
      if (e.key == "type" || e.key == "Name") continue;
      if (e.key == "Inputs") continue;  // checked below, when every name is known
      s.options[e.key] = option_value(e, origin, layer);
    }
    net.layers.push_back(std::move(s));
  }
  // Inputs may only name layers above (the order is the execution order).
  for (size_t k = 0; k < net.layers.size(); ++k) {
    LayerSpec& s = net.layers[k];
    const Entry* in = find_key(all_entries[k], "Inputs", origin);
    if (!in) continue;
    std::string layer = "layer '" + s.name + "' (" + s.type + ")";
    SourceLoc loc = origin.loc(in->key_node, in->value);
    std::vector<YAML::Node> items;
    if (in->value.IsScalar())
      items.push_back(in->value);
    else if (in->value.IsSequence() && in->value.size() > 0)
      for (const auto& n : in->value) items.push_back(n);
    bool ok = !items.empty();
    for (const auto& n : items)
      if (!n.IsScalar() || n.Scalar().empty()) ok = false;
    if (!ok)
      throw ConfigError(loc.prefix() + layer + ": Inputs must be a layer name or a list of layer names, got '" +
                        node_text(in->value) + "'");
    for (const auto& n : items) {
      const std::string& name = n.Scalar();
      auto it = index_of.find(name);
      if (it == index_of.end() && after_base) {  // a layer of the base model, checked when the network is built
        s.inputs.push_back(name);
        continue;
      }
      if (it == index_of.end()) {
        std::vector<std::string> earlier;
        for (size_t j = 0; j < k; ++j) earlier.push_back(net.layers[j].name);
        std::string hint = did_you_mean(name, earlier);
        if (hint.empty()) hint = " (Inputs names layers above this one, by Name or default name like relu_1)";
        throw ConfigError(loc.prefix() + layer + ": Inputs names '" + name + "', which is not a layer" + hint);
      }
      if (it->second >= k)
        throw ConfigError(loc.prefix() + layer + ": Inputs names '" + name + "', which " +
                          (it->second == k ? std::string("is this layer itself")
                                           : "comes later (layer " + std::to_string(it->second + 1) + ")") +
                          " (a layer takes inputs only from layers above it; reorder the list)");
      s.inputs.push_back(name);
    }
  }
  return net;
}

void write_layers(YAML::Emitter& e, const NetworkSpec& net) {
  e << YAML::BeginSeq;
  for (const auto& s : net.layers) {
    e << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "type" << YAML::Value << s.type;
    e << YAML::Key << "Name" << YAML::Value << s.name;
    if (!s.inputs.empty()) {
      e << YAML::Key << "Inputs" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& in : s.inputs) e << in;
      e << YAML::EndSeq;
    }
    for (const auto& [key, v] : s.options) {
      e << YAML::Key << key << YAML::Value;
      if (v.is_list) {
        e << YAML::Flow << YAML::BeginSeq;
        for (const auto& item : v.items) e << item;
        e << YAML::EndSeq;
      } else {
        e << (v.items.empty() ? std::string() : v.items[0]);
      }
    }
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

}  // namespace dlt::cfg
