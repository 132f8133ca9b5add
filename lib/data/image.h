// Image: an 8-bit HWC pixel buffer, the unit every decode and transform works on.
// Pixels are row-major, channels interleaved (RGB or grey), values 0..255.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlt {

struct Image {
  int height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;  // (height, width, channels)

  Image() = default;
  Image(int h, int w, int c) : height(h), width(w), channels(c), pixels(size_t(h) * w * c, 0) {}
  void reset(int h, int w, int c) {  // reuses capacity
    height = h;
    width = w;
    channels = c;
    pixels.assign(size_t(h) * w * c, 0);
  }
  size_t bytes() const { return pixels.size(); }
  uint8_t* at(int y, int x) { return pixels.data() + (size_t(y) * width + x) * channels; }
  const uint8_t* at(int y, int x) const { return pixels.data() + (size_t(y) * width + x) * channels; }
  bool empty() const { return pixels.empty(); }
};

}  // namespace dlt
