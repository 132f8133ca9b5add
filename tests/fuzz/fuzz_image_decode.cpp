// Fuzz target: image decoding for every accepted format (lib/data/decode.cpp: PNG, JPEG through
// libjpeg-turbo, BMP, GIF, TGA, PNM through stb_image) and label images (pixel_labels.cpp,
// label_images.cpp). The first byte picks the path; the rest is the file. A DataError is a
// clean refusal. Paths that take a file name read a per-process file in /dev/shm (or /tmp).
// Inputs whose header (image_size) claims 2^22 to kMaxImagePixels pixels are skipped: stb_image pads truncated data, so
// a 150-byte BMP decodes to 60 M pixels, seconds of honest work under the sanitizers (the library refuses only over
// kMaxImagePixels = 2^26, which tests/data/test_decode.cpp checks).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "data/decode.h"
#include "data/label_images.h"
#include "data/pixel_labels.h"
#include "util/error.h"

namespace {

std::string scratch_path() {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/dltrain-fuzz-image-" + std::to_string(getpid());
}

struct RemoveAtExit {
  std::string path;
  ~RemoveAtExit() { std::remove(path.c_str()); }
};

void write_scratch(const std::string& path, const uint8_t* data, size_t size) {
  static RemoveAtExit remove{path};
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const std::vector<uint8_t> bytes(data + 1, data + size);
  static const std::string path = scratch_path();
  static const dlt::PixelLabelIds grey_ids({"a", "b", "c"}, {{{0}}, {{1}, {7}}, {{255}}}, "fuzz");
  static const dlt::PixelLabelIds rgb_ids({"sky", "road"}, {{{128, 128, 128}}, {{128, 64, 128}, {0, 0, 0}}}, "fuzz");
  dlt::Image img;
  write_scratch(path, bytes.data(), bytes.size());
  try {  // the header-only size, which also decides whether to skip (see the top)
    int h = 0, w = 0;
    dlt::image_size(path, h, w);
    if (int64_t(w) * h > (1 << 22) && int64_t(w) * h <= dlt::kMaxImagePixels) return 0;
  } catch (const dlt::DataError&) {
  }
  try {
    switch (mode % 4) {
      case 0:
      case 1: {  // decode_image_memory to 1 or 3 channels
        dlt::decode_image_memory(bytes, "fuzz.img", mode % 4 == 0 ? 1 : 3, img);
        dlt::Image classes(img.height, img.width, 1);
        for (size_t i = 0; i < classes.pixels.size(); ++i) classes.pixels[i] = img.pixels[i * img.channels] % 4;
        dlt::colourize(classes, dlt::distinct_colours(3));
        if (img.channels == 3) dlt::overlay(img, classes, dlt::distinct_colours(3));
        break;
      }
      case 2: {  // as stored
        dlt::decode_image_as_stored(path, img);
        break;
      }
      default: {  // label images, integer or RGB LabelIDs, then a nearest-neighbour resize
        ((mode & 4) ? rgb_ids : grey_ids).decode(path, img);
        dlt::Image small;
        dlt::resize_nearest(img, 1 + mode / 8 % 16, 1 + mode / 128 * 7, small);
        break;
      }
    }
  } catch (const dlt::DataError&) {
  }
  return 0;
}
