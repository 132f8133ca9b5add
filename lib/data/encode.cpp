// write_image: stb_image_write into memory, then write_file_atomic (temporary name, rename).
#include "data/encode.h"

#include <stb/stb_image_write.h>

#include <filesystem>

#include "util/error.h"
#include "util/files.h"
#include "util/strings.h"

namespace dlt {

void write_image(const std::string& path, const Image& image, int jpeg_quality) {
  namespace fs = std::filesystem;
  const std::string ext = to_lower(fs::path(path).extension().string());
  const int w = image.width, h = image.height, c = image.channels;
  const void* px = image.pixels.data();
  // Encoded in memory: stb's own file writers ignore fwrite / fclose errors, so a full disk
  // left a truncated image under the final name.
  std::string bytes;
  auto sink = [](void* ctx, void* data, int size) {
    static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), size);
  };
  int ok = 0;
  if (ext == ".png") {
    ok = stbi_write_png_to_func(sink, &bytes, w, h, c, px, w * c);
  } else if (ext == ".jpg" || ext == ".jpeg") {
    ok = stbi_write_jpg_to_func(sink, &bytes, w, h, c, px, jpeg_quality);
  } else if (ext == ".bmp") {
    ok = stbi_write_bmp_to_func(sink, &bytes, w, h, c, px);
  } else if (ext == ".tga") {
    ok = stbi_write_tga_to_func(sink, &bytes, w, h, c, px);
  } else {
    throw DataError(path + ": cannot write images with extension '" + ext + "' (use .png, .jpg, .bmp or .tga)");
  }
  if (!ok) throw DataError(path + ": cannot encode the image (stb_image_write failed)");
  try {
    write_file_atomic(path, bytes);  // temporary name, checked write, fsync and close, rename
  } catch (const Error& e) {
    throw DataError(e.what());
  }
}

}  // namespace dlt
