// Class maps to images: argmax, colours, labeloverlay.
#include "data/label_images.h"

#include <cmath>
#include <stdexcept>

namespace dlt {

void argmax_classes(const float* probs, int height, int width, int k, Image& out) {
  out.reset(height, width, 1);
  const size_t n = size_t(height) * width;
  for (size_t i = 0; i < n; ++i) {
    const float* p = probs + i * size_t(k);
    int best = 0;
    for (int c = 1; c < k; ++c)
      if (p[c] > p[best]) best = c;
    out.pixels[i] = static_cast<uint8_t>(best);
  }
}

std::vector<Colour> distinct_colours(int k) {
  static const Colour lines[] = {{0, 114, 189},  {217, 83, 25},  {237, 177, 32}, {126, 47, 142},
                                 {119, 172, 48}, {77, 190, 238}, {162, 20, 47}};
  std::vector<Colour> out;
  for (int c = 0; c < k; ++c) {
    if (c < 7) {
      out.push_back(lines[c]);
      continue;
    }
    // HSV with hue stepped by the golden angle, saturation and value alternating.
    const double h = std::fmod((c - 7) * 137.50776405, 360.0) / 60.0;
    const double s = (c % 2) ? 0.65 : 0.9, v = (c % 3) ? 0.9 : 0.7;
    const double cc = v * s, x = cc * (1 - std::fabs(std::fmod(h, 2.0) - 1)), m = v - cc;
    double r = 0, g = 0, b = 0;
    switch (static_cast<int>(h)) {
      case 0:
        r = cc, g = x;
        break;
      case 1:
        r = x, g = cc;
        break;
      case 2:
        g = cc, b = x;
        break;
      case 3:
        g = x, b = cc;
        break;
      case 4:
        r = x, b = cc;
        break;
      default:
        r = cc, b = x;
        break;
    }
    auto q = [m](double u) { return static_cast<uint8_t>(std::lround((u + m) * 255)); };
    out.push_back({q(r), q(g), q(b)});
  }
  return out;
}

Image colourize(const Image& classes, const std::vector<Colour>& colours) {
  Image out(classes.height, classes.width, 3);
  const size_t n = size_t(classes.height) * classes.width;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = classes.pixels[i];
    if (c < colours.size())
      for (int ch = 0; ch < 3; ++ch) out.pixels[3 * i + ch] = colours[c][ch];
  }
  return out;
}

Image overlay(const Image& image, const Image& classes, const std::vector<Colour>& colours, double transparency) {
  if (image.channels != 3 || image.height != classes.height || image.width != classes.width)
    throw std::invalid_argument("overlay: image and class map differ in size, or the image is not RGB");
  Image out = image;
  const size_t n = size_t(classes.height) * classes.width;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = classes.pixels[i];
    if (c >= colours.size()) continue;
    for (int ch = 0; ch < 3; ++ch)
      out.pixels[3 * i + ch] = static_cast<uint8_t>(
          std::lround(transparency * image.pixels[3 * i + ch] + (1 - transparency) * colours[c][ch]));
  }
  return out;
}

}  // namespace dlt
