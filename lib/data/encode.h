// Writing Images to PNG, JPEG, BMP or TGA (by extension) with stb_image_write, atomically:
// the bytes go to a temporary name in the same folder, then rename() puts them in place.
#pragma once
#include <string>

#include "data/image.h"

namespace dlt {

// Throws DataError naming the path when the extension is unknown or the write fails.
void write_image(const std::string& path, const Image& image, int jpeg_quality = 90);

}  // namespace dlt
