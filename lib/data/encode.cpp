// write_image: stb_image_write into "<path>.tmp.<pid>.<n>", then rename.
#include "data/encode.h"

#include <stb/stb_image_write.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "util/error.h"
#include "util/strings.h"

namespace dlt {

void write_image(const std::string& path, const Image& image, int jpeg_quality) {
  namespace fs = std::filesystem;
  static std::atomic<uint64_t> counter{0};
  const std::string ext = to_lower(fs::path(path).extension().string());
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int w = image.width, h = image.height, c = image.channels;
  const void* px = image.pixels.data();
  int ok = 0;
  if (ext == ".png") {
    ok = stbi_write_png(tmp.c_str(), w, h, c, px, w * c);
  } else if (ext == ".jpg" || ext == ".jpeg") {
    ok = stbi_write_jpg(tmp.c_str(), w, h, c, px, jpeg_quality);
  } else if (ext == ".bmp") {
    ok = stbi_write_bmp(tmp.c_str(), w, h, c, px);
  } else if (ext == ".tga") {
    ok = stbi_write_tga(tmp.c_str(), w, h, c, px);
  } else {
    throw DataError(path + ": cannot write images with extension '" + ext + "' (use .png, .jpg, .bmp or .tga)");
  }
  if (!ok) {
    std::remove(tmp.c_str());
    throw DataError(path + ": cannot write image (disk full or folder not writable?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw DataError(path + ": cannot rename temporary file into place: " + why);
  }
}

}  // namespace dlt
