// Flat JSON object reader: a recursive-descent scanner over one object; nested values are
// skipped over (bracket matching that respects strings) and kept as raw text.
#include "util/flat_json.h"

#include <cstdlib>

#include "util/error.h"
#include "util/files.h"
#include "util/numbers.h"

namespace dlt {

namespace {

class Scanner {
 public:
  Scanner(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  FlatJson object() {
    FlatJson out;
    skip_ws();
    expect('{', "'{' at the start of an object");
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return finish(out);
    }
    for (;;) {
      skip_ws();
      if (peek() != '"') fail("a string key");
      std::string key = string_value();
      skip_ws();
      expect(':', "':' after key \"" + key + "\"");
      skip_ws();
      out[key] = value();
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}', "',' or '}' after the value of \"" + key + "\"");
      return finish(out);
    }
  }

 private:
  FlatJson finish(FlatJson& out) {
    skip_ws();
    if (pos_ != s_.size()) fail("the end of the text after the closing '}'");
    return std::move(out);
  }

  JsonScalar value() {
    JsonScalar v;
    char c = peek();
    if (c == '"') {
      v.kind = JsonScalar::Kind::String;
      v.text = string_value();
    } else if (c == '{' || c == '[') {
      v.kind = JsonScalar::Kind::Nested;
      size_t start = pos_;
      skip_nested();
      v.text = s_.substr(start, pos_ - start);
    } else if (literal("true")) {
      v.kind = JsonScalar::Kind::Bool;
      v.text = "true";
      v.number = 1;
    } else if (literal("false")) {
      v.kind = JsonScalar::Kind::Bool;
      v.text = "false";
    } else if (literal("null")) {
      v.kind = JsonScalar::Kind::Null;
    } else {
      size_t start = pos_;
      while (pos_ < s_.size() && std::string("+-0123456789.eE").find(s_[pos_]) != std::string::npos) ++pos_;
      v.text = s_.substr(start, pos_ - start);
      if (!parse_double(v.text, &v.number)) {
        pos_ = start;
        fail("a value (string, number, true, false, null, array or object)");
      }
      v.kind = JsonScalar::Kind::Number;
    }
    return v;
  }

  std::string string_value() {
    expect('"', "'\"'");
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u':
          out += unicode_escape();
          break;
        default:
          out += e;  // \" \\ \/
      }
    }
    expect('"', "the closing '\"' of a string");
    return out;
  }

  // \uXXXX (after the 'u') as UTF-8; surrogate pairs are not combined (our writer never emits them).
  std::string unicode_escape() {
    if (pos_ + 4 > s_.size()) fail("four hex digits after \\u");
    unsigned cp = static_cast<unsigned>(std::strtoul(s_.substr(pos_, 4).c_str(), nullptr, 16));
    pos_ += 4;
    std::string out;
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
  }

  void skip_nested() {
    int depth = 0;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '"') {
        string_value();
        continue;
      }
      ++pos_;
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return;
      }
    }
    fail("the end of a nested array or object");
  }

  bool literal(const char* word) {
    std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  void expect(char c, const std::string& what) {
    if (peek() != c) fail(what);
    ++pos_;
  }
  [[noreturn]] void fail(const std::string& expected) const {
    std::string got = pos_ < s_.size() ? "'" + s_.substr(pos_, 12) + "'" : "the end of the text";
    throw DataError(what_ + ": offset " + std::to_string(pos_) + ": expected " + expected + ", got " + got +
                    " (not a complete JSON object; rewrite or delete it)");
  }

  const std::string& s_;
  const std::string& what_;
  size_t pos_ = 0;
};

}  // namespace

FlatJson parse_flat_json(const std::string& text, const std::string& what) { return Scanner(text, what).object(); }

FlatJson read_flat_json(const std::string& path) { return parse_flat_json(read_file(path), path); }

double json_number_or(const FlatJson& j, const std::string& key, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->second.kind != JsonScalar::Kind::Number) return fallback;
  return it->second.number;
}

std::string json_string_or(const FlatJson& j, const std::string& key, const std::string& fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->second.kind != JsonScalar::Kind::String) return fallback;
  return it->second.text;
}

}  // namespace dlt
