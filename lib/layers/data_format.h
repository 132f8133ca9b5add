// MATLAB's data formats of what flows between layers, per image: an image SSCB (H, W, C), a
// token sequence SCB (S tokens of C channels, held as (S, 1, C): the same memory as (S, C)),
// one vector CB (1, 1, C). The network hands each layer its inputs' formats (Layer::takes,
// Layer::output_format) and `dltrain info` shows them.
#pragma once
#include <string>

#include "tensor/shape.h"

namespace dlt {

enum class DataFormat { kSSCB, kSCB, kCB };

// "SSCB", "SCB", "CB".
const char* format_name(DataFormat f);
// A per-image shape in the format's dimensions, without the batch: "32x32x3" (SSCB), "65x192"
// (SCB), "10" (CB).
std::string format_dims(DataFormat f, const Shape& per_image);

}  // namespace dlt
