// The environment variables dltrain reads (DLT_*, docs/config.md "Environment variables"):
// one reader per kind of value, so every boolean variable takes the same spellings and every
// bad value is one line naming the variable. Reads only; nothing here sets a variable.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace dlt {

// What a boolean variable takes, for messages: "1 or 0 (true/false, on/off, yes/no)".
extern const char* const kEnvFlagSpellings;

// The variable's value; empty when it is unset.
std::string env_text(const char* name);

// A boolean variable: nullopt when unset or empty; true for 1, true, on, yes and false for
// 0, false, off, no (any case; util/numbers.h parse_bool). Any other value throws ConfigError
// naming the variable and the spellings.
std::optional<bool> env_flag(const char* name);

// A whole-number variable in [lo, hi]: nullopt when unset or empty; ConfigError naming the
// variable and the range for anything else.
std::optional<int64_t> env_int(const char* name, int64_t lo, int64_t hi);

}  // namespace dlt
