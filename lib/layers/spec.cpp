#include "layers/spec.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "util/error.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace dlt {

std::string SourceLoc::prefix() const {
  if (file.empty()) return "";
  return line > 0 ? file + ":" + std::to_string(line) + ": " : file + ": ";
}

std::string SpecValue::str() const {
  if (!is_list) return items.empty() ? "" : items[0];
  return "[" + join(items, ", ") + "]";
}

std::string LayerSpec::where() const { return loc.prefix() + "layer '" + name + "' (" + type + "): "; }

const SpecValue* LayerSpec::get(const std::string& key) const {
  used_.insert(key);  // asked for: a known option of this layer type, present or not
  auto it = options.find(key);
  if (it == options.end()) return nullptr;
  return &it->second;
}

namespace {

[[noreturn]] void bad(const LayerSpec& s, const std::string& key, const SpecValue& v, const std::string& expected) {
  std::string at = v.loc.prefix().empty() ? s.where() : v.loc.prefix() + "layer '" + s.name + "' (" + s.type + "): ";
  throw ConfigError(at + "option " + key + " must be " + expected + ", got '" + v.str() + "'");
}

}  // namespace

double LayerSpec::get_double(const std::string& key, double def) const {
  const SpecValue* v = get(key);
  if (!v) return def;
  double d;
  if (v->is_list || v->items.size() != 1 || !parse_double(v->items[0], &d)) bad(*this, key, *v, "a number");
  return d;
}

int64_t LayerSpec::get_int(const std::string& key, int64_t def, int64_t min) const {
  const SpecValue* v = get(key);
  if (!v) return def;
  int64_t i;
  if (v->is_list || v->items.size() != 1 || !parse_int(v->items[0], &i) || i < min)
    bad(*this, key, *v, min == INT64_MIN ? "an integer" : "an integer >= " + std::to_string(min));
  return i;
}

bool LayerSpec::get_bool(const std::string& key, bool def) const {
  const SpecValue* v = get(key);
  if (!v) return def;
  if (!v->is_list && v->items.size() == 1) {
    std::string t = to_lower(v->items[0]);
    if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
    if (t == "false" || t == "0" || t == "no" || t == "off") return false;
  }
  bad(*this, key, *v, "true or false");
}

std::string LayerSpec::get_string(const std::string& key, const std::string& def) const {
  const SpecValue* v = get(key);
  if (!v) return def;
  if (v->is_list || v->items.size() != 1) bad(*this, key, *v, "a single value");
  return v->items[0];
}

std::string LayerSpec::get_choice(const std::string& key, const std::string& def,
                                  const std::vector<std::string>& choices) const {
  const SpecValue* v = get(key);
  if (!v) return def;
  if (!v->is_list && v->items.size() == 1)
    for (const auto& c : choices)
      if (iequals(c, v->items[0])) return c;
  std::string hint = v->items.empty() ? "" : did_you_mean(v->items[0], choices);
  bad(*this, key, *v, "one of " + join(choices, ", ") + hint);
}

std::vector<int64_t> LayerSpec::get_ints(const std::string& key, std::vector<int64_t> def, size_t n,
                                         int64_t min) const {
  const SpecValue* v = get(key);
  if (!v) return def;
  std::string expected = n == 1 ? "an integer" : "an integer or a list of " + std::to_string(n) + " integers";
  if (min != INT64_MIN) expected += " >= " + std::to_string(min);
  std::vector<int64_t> out;
  for (const auto& t : v->items) {
    int64_t i;
    if (!parse_int(t, &i) || i < min) bad(*this, key, *v, expected);
    out.push_back(i);
  }
  if (out.size() == 1 && n > 1) out.assign(n, out[0]);
  if (out.size() != n) bad(*this, key, *v, expected);
  return out;
}

std::vector<double> LayerSpec::get_doubles(const std::string& key, std::vector<double> def) const {
  const SpecValue* v = get(key);
  if (!v) return def;
  std::vector<double> out;
  for (const auto& t : v->items) {
    double d;
    if (!parse_double(t, &d)) bad(*this, key, *v, "a list of numbers");
    out.push_back(d);
  }
  return out;
}

void LayerSpec::check_all_used() const {
  for (const auto& [key, v] : options) {
    if (used_.count(key)) continue;
    std::vector<std::string> known(used_.begin(), used_.end());
    std::string at = v.loc.prefix().empty() ? where() : v.loc.prefix() + "layer '" + name + "' (" + type + "): ";
    throw ConfigError(at + "unknown option '" + key + "'" + did_you_mean(key, known));
  }
}

void LayerSpec::set(const std::string& key, const std::string& value) {
  SpecValue v;
  v.items = {value};
  options[key] = v;
}

const LayerSpec* NetworkSpec::find(const std::string& name) const {
  for (const auto& l : layers)
    if (l.name == name) return &l;
  return nullptr;
}

LayerSpec* NetworkSpec::find(const std::string& name) {
  for (auto& l : layers)
    if (l.name == name) return &l;
  return nullptr;
}

}  // namespace dlt
