// --set overrides: "section.path=value" applied to the parsed YAML tree before conversion, so
// values from the command line get the same checks as values from the file.
#include <algorithm>
#include <utility>

#include "config/sections.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt::cfg {

namespace {

const std::vector<std::string> kSections = {"layers", "data", "training"};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The map under parent[key], created when missing. Returns false when it exists but is not a map.
bool child_map(YAML::Node parent, const std::string& key, YAML::Node* out) {
  // Node handles: reset() rebinds, while operator= would overwrite the node it refers to.
  YAML::Node n;
  n.reset(parent[key]);
  if (!n.IsDefined() || n.IsNull()) {
    parent[key] = YAML::Node(YAML::NodeType::Map);
    n.reset(parent[key]);
  }
  out->reset(n);
  return n.IsMap();
}

// For a key given without its section ("MaxEpochs=1"): " (did you mean training.MaxEpochs=1?)"
// when the key, or the one close name, belongs to exactly one section; else "".
std::string qualified_hint(const std::string& key, const std::string& value) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> sections = {
      {"training", training_keys()}, {"data", data_keys()}, {"data.Augmentation", augmentation_keys()}};
  std::vector<std::string> exact, near;
  for (const auto& [section, keys] : sections)
    for (const auto& k : keys) {
      if (iequals(k, key)) exact.push_back(section + "." + k);
      if (edit_distance(k, key) <= std::max<size_t>(2, key.size() / 3)) near.push_back(section + "." + k);
    }
  const std::vector<std::string>& pick = exact.empty() ? near : exact;
  if (pick.size() != 1) return "";
  return " (did you mean " + pick[0] + "=" + value + "?)";
}

}  // namespace

void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, Origin& origin) {
  for (const auto& ov : overrides) {
    const std::string what = "--set " + ov;
    auto fail = [&](const std::string& msg) { throw ConfigError(what + ": " + msg); };
    size_t eq = ov.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("expected section.key=value (e.g. training.MaxEpochs=1 or layers.conv1.NumFilters=20)");
    const std::string path = ov.substr(0, eq), text = ov.substr(eq + 1);
    YAML::Node value;
    try {
      value = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      fail("value '" + text + "' is not valid YAML: " + e.msg + " (quote it)");
    }
    size_t dot = path.find('.');
    std::string section = path.substr(0, dot);
    if (!contains(kSections, section)) {
      std::string hint = dot == std::string::npos ? qualified_hint(section, text) : "";
      if (hint.empty()) hint = did_you_mean(section, kSections);
      fail("unknown section '" + section + "'" + (hint.empty() ? " (sections: layers, data, training)" : hint));
    }
    if (dot == std::string::npos || dot + 1 == path.size())
      fail("name a key inside " + section +
           " (e.g. training.MaxEpochs=1, data.train=/data/x, "
           "layers.conv1.NumFilters=20)");
    std::string rest = path.substr(dot + 1);
    if (section == "training" && rest == "ValidationData") {  // MATLAB's name for data.validation
      section = "data";
      rest = "validation";
    }
    if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    YAML::Node target;  // the map receiving the key
    std::string key;

    if (section == "training") {
      key = rest;
      if (rest.find('.') != std::string::npos)
        fail("training options have no sub-keys (write training.<Option>=value)");
      if (!contains(training_keys(), key)) fail(unknown_training_message(key));
      if (!child_map(root, "training", &target)) fail("the file's training: section is not a map");
    } else if (section == "data") {
      std::vector<std::string> parts = split(rest, '.');
      if (!contains(data_keys(), parts[0])) fail(unknown_data_message(parts[0]));
      if (!child_map(root, "data", &target)) fail("the file's data: section is not a map");
      key = parts[0];
      if (parts.size() == 2 && (parts[0] == "train" || parts[0] == "validation")) {
        // Segmentation: data.train.images / data.train.labels (pixelLabelDatastore pairs).
        if (parts[1] != "images" && parts[1] != "labels")
          fail("data." + parts[0] + " has no sub-key '" + parts[1] + "' (images or labels)");
        YAML::Node pair;
        if (!child_map(target, parts[0], &pair))
          fail("the file's data." + parts[0] + " is a folder, not {images, labels} (set data." + parts[0] +
               "={images: DIR, labels: DIR})");
        target.reset(pair);
        key = parts[1];
      } else if (parts.size() > 1) {
        if (parts[0] != "Augmentation" || parts.size() > 2)
          fail("data." + parts[0] + " has no sub-key '" + parts.back() + "'");
        if (!contains(augmentation_keys(), parts[1])) fail(unknown_augmentation_message(parts[1]));
        YAML::Node aug;
        if (!child_map(target, "Augmentation", &aug)) fail("the file's data.Augmentation is not a map");
        target.reset(aug);
        key = parts[1];
      }
    } else {  // layers.<name>.<key>; a name may itself contain dots
      size_t last = rest.rfind('.');
      if (last == std::string::npos || last == 0 || last + 1 == rest.size())
        fail("expected layers.<layer name>.<option>=value (e.g. layers.conv1.NumFilters=20)");
      const std::string name = rest.substr(0, last);
      key = rest.substr(last + 1);
      YAML::Node layers;
      layers.reset(root["layers"]);
      if (!layers.IsSequence()) fail("the file has no list of layers to change");
      std::vector<std::string> names = layer_names(layers);
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        std::string hint = did_you_mean(name, names);
        fail("no layer named '" + name + "'" + (hint.empty() ? " (layers: " + join(names, ", ") + ")" : hint));
      }
      for (const char* reserved : {"type", "Name", "Inputs"})
        if (key != reserved && iequals(key, reserved))
          fail("unknown layer key '" + key + "' (did you mean '" + std::string(reserved) + "'?)");
      target.reset(layers[static_cast<size_t>(it - names.begin())]);
      if (!target.IsMap()) fail("layer '" + name + "' is not a map of options");
    }
    target[key] = value;
    origin.mark_override(value, what);
  }
}

}  // namespace dlt::cfg
