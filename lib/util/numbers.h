// The one number parser: strict parsing of whole strings (config values, environment
// variables, command-line arguments, JSON numbers) and the shortest round-trip formatting.
// Every function returns false, leaving *out alone, when the text is not entirely a value.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlt {

// true/yes/on/1 or false/no/off/0, case-insensitive.
bool parse_bool(const std::string& text, bool* out);
// A whole integer; also an integral number written as 1e3 or 100.0 (up to 9e15). A leading
// '+' is accepted; spaces are not.
bool parse_int(const std::string& text, int64_t* out);
// parse_int for values >= 0, up to UINT64_MAX when written as plain digits.
bool parse_uint(const std::string& text, uint64_t* out);
// A finite number (decimal or hex float; not nan or inf; no leading space).
bool parse_double(const std::string& text, double* out);
// Inf, inf, .inf, +Inf: MATLAB's and YAML's spellings of infinity.
bool is_inf_text(const std::string& text);
// Sizes written as "227x227x3": whole integers >= 1 (up to INT32_MAX) separated by 'x'.
bool parse_dims(const std::string& text, std::vector<int64_t>* out);
// Shortest text that parses back to exactly d ("0.001", "1e-08"; "Inf" for infinity).
std::string format_double(double d);

}  // namespace dlt
