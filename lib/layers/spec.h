// Typed-on-access network specs, independent of YAML. lib/config fills them from a file;
// the model file stores and restores them. A LayerSpec keeps every option as written (a
// scalar or a list of scalars, with where it came from) and converts on access, so errors
// name the layer, the option, the file and the line. Accessors mark options as used;
// check_all_used() reports leftovers with a did-you-mean.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace dlt {

struct SourceLoc {
  std::string file;
  int line = 0;  // 1-based; 0 = unknown (command line, model file)
  // "cfg.yaml:12: " or "" when unknown
  std::string prefix() const;
};

struct SpecValue {
  std::vector<std::string> items;  // one item for a scalar
  bool is_list = false;
  SourceLoc loc;
  std::string str() const;  // "5" or "[3, 3]"
};

class LayerSpec {
 public:
  std::string name;
  std::string type;                 // MATLAB-style: convolution2d, relu, ...
  std::vector<std::string> inputs;  // empty: the previous layer
  SourceLoc loc;
  std::map<std::string, SpecValue> options;  // MATLAB option names as keys

  bool has(const std::string& key) const { return options.count(key) != 0; }
  // Typed getters: missing -> the default; wrong type or range -> ConfigError naming the
  // file:line, the layer and the option.
  double get_double(const std::string& key, double def) const;
  int64_t get_int(const std::string& key, int64_t def, int64_t min = INT64_MIN) const;
  bool get_bool(const std::string& key, bool def) const;
  std::string get_string(const std::string& key, const std::string& def) const;
  // One of choices (case-insensitive; returns the canonical spelling).
  std::string get_choice(const std::string& key, const std::string& def, const std::vector<std::string>& choices) const;
  // A scalar broadcast to n values, or a list of exactly n (e.g. FilterSize 5 or [5 3]).
  std::vector<int64_t> get_ints(const std::string& key, std::vector<int64_t> def, size_t n,
                                int64_t min = INT64_MIN) const;
  std::vector<double> get_doubles(const std::string& key, std::vector<double> def) const;
  // Raw access (marks used).
  const SpecValue* get(const std::string& key) const;

  // Throws ConfigError for the first option never read: "unknown option ... (did you mean".
  void check_all_used() const;
  // "file:line: layer 'conv1' (convolution2d): "
  std::string where() const;

  void set(const std::string& key, const std::string& value);  // scalar, used by --set and loaders

 private:
  mutable std::set<std::string> used_;
};

struct NetworkSpec {
  std::vector<LayerSpec> layers;
  // training.Loss (trainnet's lossFcn name, e.g. "mse"; empty: none) and where it was set: a
  // network without an output layer gets the matching one appended (Network::build).
  std::string loss;
  SourceLoc loss_loc;
  const LayerSpec* find(const std::string& name) const;
  LayerSpec* find(const std::string& name);
};

}  // namespace dlt
