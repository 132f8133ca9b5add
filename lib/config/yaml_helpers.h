// Internal to lib/config: where a YAML node came from (file:line, or the --set override that
// produced it), value text for messages, the list reader and YAML parsing. It exposes
// yaml-cpp, so nothing outside lib/config includes it.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "layers/spec.h"
#include "util/numbers.h"  // parse_bool, parse_int, parse_double, format_double

namespace dlt::cfg {

// Maps nodes to source locations. Nodes from the file report "file:line"; nodes a --set
// override produced report the override text ("--set training.MaxEpochs=abc").
class Origin {
 public:
  explicit Origin(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }
  // Registers node and everything under it as coming from the override `what`.
  void mark_override(const YAML::Node& node, const std::string& what);
  SourceLoc loc(const YAML::Node& node) const;
  // Location of a map entry: the override that set the value, else the key's line (the
  // line a reader looks for, also for empty values and block lists under the key).
  SourceLoc loc(const YAML::Node& key, const YAML::Node& value) const;
  std::string at(const YAML::Node& node) const { return loc(node).prefix(); }

 private:
  std::string file_;
  std::vector<std::pair<YAML::Node, std::string>> overrides_;
};

// One key/value pair of a map, in file order.
struct Entry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};
// The entries of a map node. Throws ConfigError (with file:line) when node is not a map,
// a key is not a plain scalar, or a key repeats. `what` names the map in messages.
std::vector<Entry> map_entries(const YAML::Node& node, const Origin& origin, const std::string& what);

// The value as it would be written in flow style: "abc", "[1, 2]", "{a: 1}", "" for null.
std::string node_text(const YAML::Node& node);

// The items of a sequence node. MATLAB separates numbers with spaces ([32 32 3]), which YAML
// reads as one item "32 32 3": a plain (unquoted) item of several space-separated numbers
// becomes one scalar node per number.
std::vector<YAML::Node> list_items(const YAML::Node& seq);

// Parses YAML text; syntax errors become ConfigError "origin:line: YAML syntax error: ...",
// or "origin:line: a tab in the indentation ..." when a tab-indented line explains them.
YAML::Node parse_yaml(const std::string& text, const std::string& origin);

}  // namespace dlt::cfg
