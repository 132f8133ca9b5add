#include "util/one_line.h"

#include <cstdio>

namespace dlt {

std::string one_line(const std::string& s, size_t max_chars) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  if (out.size() > max_chars && max_chars >= 10) {
    const size_t tail = max_chars / 4, head = max_chars - tail - 5;
    out = out.substr(0, head) + " ... " + out.substr(out.size() - tail);
  }
  return out;
}

}  // namespace dlt
