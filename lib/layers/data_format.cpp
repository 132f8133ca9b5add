#include "layers/data_format.h"

namespace dlt {

const char* format_name(DataFormat f) {
  switch (f) {
    case DataFormat::kSSCB:
      return "SSCB";
    case DataFormat::kSCB:
      return "SCB";
    case DataFormat::kCB:
      return "CB";
  }
  return "?";
}

std::string format_dims(DataFormat f, const Shape& s) {
  if (s.rank() != 3) return s.str();
  switch (f) {
    case DataFormat::kSSCB:
      return s.str();
    case DataFormat::kSCB:
      return std::to_string(s[0] * s[1]) + "x" + std::to_string(s[2]);
    case DataFormat::kCB:
      return std::to_string(s.numel());
  }
  return s.str();
}

}  // namespace dlt
