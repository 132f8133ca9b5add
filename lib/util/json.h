// A minimal JSON writer for summaries and --json output (objects, arrays, strings, numbers).
// Non-finite numbers are written as null.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace dlt {

std::string json_escape(const std::string& s);

class JsonWriter {
 public:
  JsonWriter& begin_object() {
    sep();
    out_ += '{';
    first_ = true;
    return *this;
  }
  JsonWriter& end_object() {
    out_ += '}';
    first_ = false;
    return *this;
  }
  JsonWriter& begin_array() {
    sep();
    out_ += '[';
    first_ = true;
    return *this;
  }
  JsonWriter& end_array() {
    out_ += ']';
    first_ = false;
    return *this;
  }
  JsonWriter& key(const std::string& k) {
    sep();
    out_ += '"' + json_escape(k) + "\":";
    first_ = true;  // the value follows without a comma
    return *this;
  }
  JsonWriter& value(const std::string& s) {
    sep();
    out_ += '"' + json_escape(s) + '"';
    return *this;
  }
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(double d);
  JsonWriter& value(int64_t i) {
    sep();
    out_ += std::to_string(i);
    return *this;
  }
  JsonWriter& value(int i) { return value(static_cast<int64_t>(i)); }
  JsonWriter& value(bool b) {
    sep();
    out_ += b ? "true" : "false";
    return *this;
  }
  JsonWriter& null() {
    sep();
    out_ += "null";
    return *this;
  }
  template <typename T>
  JsonWriter& field(const std::string& k, const T& v) {
    key(k);
    return value(v);
  }
  const std::string& str() const { return out_; }

 private:
  void sep() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  std::string out_;
  bool first_ = true;
};

}  // namespace dlt
