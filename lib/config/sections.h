// Internal to lib/config: the readers and writers of each config section, and --set.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <vector>

#include "config/options.h"
#include "config/yaml_helpers.h"
#include "layers/spec.h"

namespace dlt::cfg {

void read_training(const YAML::Node& node, const Origin& origin, TrainingOptions& out);
void write_training(YAML::Emitter& e, const TrainingOptions& opts);
// Reads one training option from text, through the same table and checks as YAML: an
// environment variable's value. A bad value calls `fail` (which throws) with what was expected.
void read_training_value(const std::string& option, const std::string& text, TrainingOptions& out,
                         const std::function<void(const std::string& expect, const std::string& hint)>& fail);
std::vector<std::string> training_keys();
// Whether `solver` reads the training option (Momentum: sgdm; GradientDecayFactor: adam and
// adamw; SquaredGradientDecayFactor, Epsilon: adam, rmsprop and adamw; WeightDecay: adamw;
// every other option: all of them).
bool solver_reads(const std::string& option, Solver solver);
// The training options written in `training` (the file and --set) that the run would not use
// (config/option_checks.cpp): throws ConfigError for an option of another solver and for
// OutputNetwork best-validation without validation data; appends one warning line each for a
// validation option (with a value other than its default) without validation data and for
// LearnRateDropFactor / LearnRateDropPeriod without a named piecewise schedule.
void check_option_use(const YAML::Node& training, const Origin& origin, const DataOptions& data,
                      const TrainingOptions& options, std::vector<std::string>& warnings);
// "unknown training option 'K' (fix)": the one message for an unknown key from YAML or --set.
std::string unknown_training_message(const std::string& key);
// MATLAB's trainingOptions ValidationData is dltrain's data.validation: moves the file's
// training.ValidationData there (ConfigError when both are given). --set
// training.ValidationData=DIR is redirected by apply_overrides itself.
void move_training_aliases(YAML::Node& root, const Origin& origin);

// training.LearnRateSchedule (config/schedule_section.cpp): none, a name, a schedule object
// {type: cosineLearnRate, Period: 20}, or a list of them run in sequence. `what` names the
// option in messages ("training.LearnRateSchedule").
std::vector<ScheduleSpec> read_learn_rate_schedule(const YAML::Node& key, const YAML::Node& value, const Origin& origin,
                                                   const std::string& what);
void write_learn_rate_schedule(YAML::Emitter& e, const std::vector<ScheduleSpec>& schedules);

void read_data(const YAML::Node& node, const Origin& origin, DataOptions& out);
void write_data(YAML::Emitter& e, const DataOptions& opts);
std::vector<std::string> data_keys();
std::vector<std::string> augmentation_keys();
std::string unknown_data_message(const std::string& key);
std::string unknown_augmentation_message(const std::string& key);

// layers: a sequence of maps -> NetworkSpec (types canonical, default names filled in).
// after_base: the list follows a base: model's layers, so Inputs may also name layers of the
// model, which only the built network checks.
NetworkSpec read_layers(const YAML::Node& node, const Origin& origin, bool after_base = false);
void write_layers(YAML::Emitter& e, const NetworkSpec& net);
// The canonical spelling of a layer type, or "" when unknown.
std::string canonical_layer_type(const std::string& type);
const std::vector<std::string>& known_layer_types();
// Each entry's name as read_layers will assign it (explicit Name or "<type>_<k>"), without
// validating anything else; used to address layers from --set.
std::vector<std::string> layer_names(const YAML::Node& layers);

// layers: {segnetLayers: {...}} becomes the list of layers MATLAB's
// function returns (config/network_generators.cpp); the generated nodes are registered with
// origin as coming from the generator's line. Anything else is left alone.
void expand_layer_generators(YAML::Node& root, Origin& origin);
std::vector<std::string> network_generator_names();

// Applies "section.path=value" overrides to the parsed tree, registering the new values
// with origin so later errors name the override.
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, Origin& origin);

}  // namespace dlt::cfg
