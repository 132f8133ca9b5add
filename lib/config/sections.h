// Internal to lib/config: the readers and writers of each config section, and --set.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/options.h"
#include "config/yaml_helpers.h"
#include "net/spec.h"

namespace dlt::cfg {

void read_training(const YAML::Node& node, const Origin& origin, TrainingOptions& out);
void write_training(YAML::Emitter& e, const TrainingOptions& opts);
std::vector<std::string> training_keys();

void read_data(const YAML::Node& node, const Origin& origin, DataOptions& out);
void write_data(YAML::Emitter& e, const DataOptions& opts);
std::vector<std::string> data_keys();
std::vector<std::string> augmentation_keys();

// layers: a sequence of maps -> NetworkSpec (types canonical, default names filled in).
NetworkSpec read_layers(const YAML::Node& node, const Origin& origin);
void write_layers(YAML::Emitter& e, const NetworkSpec& net);
// The canonical spelling of a layer type, or "" when unknown.
std::string canonical_layer_type(const std::string& type);
const std::vector<std::string>& known_layer_types();
// Each entry's name as read_layers will assign it (explicit Name or "<type>_<k>"), without
// validating anything else; used to address layers from --set.
std::vector<std::string> layer_names(const YAML::Node& layers);

// Applies "section.path=value" overrides to the parsed tree, registering the new values
// with origin so later errors name the override.
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, Origin& origin);

}  // namespace dlt::cfg
