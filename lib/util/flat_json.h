// A small reader for flat JSON objects such as a run's summary.json: top-level keys with string,
// number, true/false or null values. Nested arrays and objects are accepted and kept as their raw
// text (not parsed further). Not a general JSON library: no streaming, no nested access.
#pragma once
#include <map>
#include <string>

namespace dlt {

struct JsonScalar {
  enum class Kind { String, Number, Bool, Null, Nested };
  Kind kind = Kind::Null;
  std::string text;   // the string (unescaped), or the raw text of a number, bool or nested value
  double number = 0;  // Number: the value; Bool: 1 or 0
};

using FlatJson = std::map<std::string, JsonScalar>;

// Parses one JSON object; `what` names the source in errors. Throws DataError
// ("<what>: offset N: expected ... (the file is not a JSON object; rewrite or delete it)").
FlatJson parse_flat_json(const std::string& text, const std::string& what = "JSON text");
// Reads and parses a file; errors name the path.
FlatJson read_flat_json(const std::string& path);

// Typed lookups: a missing key, null or a value of another kind gives the fallback.
double json_number_or(const FlatJson& j, const std::string& key, double fallback);
std::string json_string_or(const FlatJson& j, const std::string& key, const std::string& fallback);

}  // namespace dlt
