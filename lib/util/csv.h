// CSV output helpers.
#pragma once
#include <string>

namespace dlt {

// One CSV field (RFC 4180): s as it is, or double-quoted with its quotes doubled when it holds a
// comma, a quote or a line break.
std::string csv_field(const std::string& s);

}  // namespace dlt
