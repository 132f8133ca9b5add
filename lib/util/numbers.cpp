// The one number parser (numbers.h): from_chars / strtod over the whole string.
#include "util/numbers.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "util/strings.h"

namespace dlt {

bool parse_bool(const std::string& text, bool* out) {
  std::string t = to_lower(text);
  if (t == "true" || t == "yes" || t == "on" || t == "1") {
    *out = true;
    return true;
  }
  if (t == "false" || t == "no" || t == "off" || t == "0") {
    *out = false;
    return true;
  }
  return false;
}

bool parse_double(const std::string& text, double* out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(d)) return false;
  // strtod accepts hex floats and "nan"/"inf"; the first are fine, the last rejected above.
  *out = d;
  return true;
}

bool parse_int(const std::string& text, int64_t* out) {
  int64_t v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  if (!text.empty() && *b == '+') ++b;
  auto r = std::from_chars(b, e, v);
  if (r.ec == std::errc() && r.ptr == e && b != e) {
    *out = v;
    return true;
  }
  double d;  // 1e3, 100.0
  if (!parse_double(text, &d) || d != std::floor(d) || std::fabs(d) > 9e15) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

bool parse_uint(const std::string& text, uint64_t* out) {
  uint64_t v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  auto r = std::from_chars(b, e, v);
  if (r.ec == std::errc() && r.ptr == e && b != e) {
    *out = v;
    return true;
  }
  int64_t i;
  if (!parse_int(text, &i) || i < 0) return false;
  *out = static_cast<uint64_t>(i);
  return true;
}

bool parse_dims(const std::string& text, std::vector<int64_t>* out) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (true) {
    const size_t x = text.find('x', start);
    int64_t v = 0;
    const std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (part.find_first_not_of("0123456789") != std::string::npos || !parse_int(part, &v) || v < 1 || v > 2147483647)
      return false;
    dims.push_back(v);
    if (x == std::string::npos) break;
    start = x + 1;
  }
  *out = dims;
  return true;
}

bool is_inf_text(const std::string& text) {
  std::string t = to_lower(text);
  return t == "inf" || t == ".inf" || t == "+inf" || t == "+.inf";
}

std::string format_double(double d) {
  if (std::isinf(d)) return d > 0 ? "Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, r.ptr);
  // Keep integral values readable as numbers ("2", not "2e+00"); to_chars already does.
  return s;
}

}  // namespace dlt
