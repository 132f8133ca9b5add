// Readers of DLT_* environment variables (env.h): getenv, then the one number parser.
#include "util/env.h"

#include <cstdlib>

#include "util/error.h"
#include "util/numbers.h"

namespace dlt {

const char* const kEnvFlagSpellings = "1 or 0 (true/false, on/off, yes/no)";

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::optional<bool> env_flag(const char* name) {
  const std::string v = env_text(name);
  if (v.empty()) return std::nullopt;
  bool b = false;
  if (!parse_bool(v, &b))
    throw ConfigError(std::string(name) + " is '" + v + "'; set it to " + kEnvFlagSpellings + ", or unset it");
  return b;
}

std::optional<int64_t> env_int(const char* name, int64_t lo, int64_t hi) {
  const std::string v = env_text(name);
  if (v.empty()) return std::nullopt;
  int64_t n = 0;
  if (!parse_int(v, &n) || n < lo || n > hi)
    throw ConfigError(std::string(name) + " is '" + v + "'; set it to a whole number from " + std::to_string(lo) +
                      " to " + std::to_string(hi) + ", or unset it");
  return n;
}

}  // namespace dlt
