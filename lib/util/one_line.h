// Error text from untrusted files (names, op types, paths inside a model) made safe to print
// as one terminal line: control characters escaped, very long text shortened.
#pragma once
#include <cstddef>
#include <string>

namespace dlt {

// "\n" -> "\\n", "\t" -> "\\t", other bytes below 0x20 and 0x7f -> "\\xNN" (UTF-8 is kept);
// longer than max_chars: the start and the end with " ... " between them.
std::string one_line(const std::string& s, size_t max_chars = 2000);

}  // namespace dlt
