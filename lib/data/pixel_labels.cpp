// Label-image decoding through ClassNames / LabelIDs, and nearest-neighbour resizing.
#include "data/pixel_labels.h"

#include <algorithm>
#include <cmath>

#include "data/decode.h"
#include "util/error.h"

namespace dlt {

namespace {

uint32_t pack(int64_t r, int64_t g, int64_t b) { return uint32_t(r) << 16 | uint32_t(g) << 8 | uint32_t(b); }

std::string value_str(const std::vector<int64_t>& v) {
  if (v.size() == 1) return std::to_string(v[0]);
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

PixelLabelIds::PixelLabelIds(std::vector<std::string> class_names,
                             const std::vector<std::vector<std::vector<int64_t>>>& ids, const std::string& where)
    : class_names_(std::move(class_names)), ids_(ids) {
  grey_.fill(kUndefinedPixel);
  const size_t n = class_names_.size();
  if (n == 0) throw ConfigError(where + ": ClassNames is empty (list the classes, e.g. [sky, road])");
  if (n > size_t(kMaxPixelClasses))
    throw ConfigError(where + ": " + std::to_string(n) + " classes; at most " + std::to_string(kMaxPixelClasses));
  if (ids.size() != n)
    throw ConfigError(where + ": ClassNames has " + std::to_string(n) + " classes but LabelIDs has " +
                      std::to_string(ids.size()) + " entries (give one value or list of values per class)");
  bool seen_int = false, seen_rgb = false;
  for (size_t c = 0; c < n; ++c) {
    const std::string cls = "class '" + class_names_[c] + "'";
    if (ids[c].empty()) throw ConfigError(where + ": " + cls + " has no label value");
    for (const auto& v : ids[c]) {
      if (v.size() != 1 && v.size() != 3)
        throw ConfigError(where + ": " + cls + " value " + value_str(v) +
                          " must be one integer or an RGB triplet [r, g, b]");
      for (int64_t x : v)
        if (x < 0 || x > 255)
          throw ConfigError(where + ": " + cls + " value " + value_str(v) + " is outside 0..255");
      (v.size() == 1 ? seen_int : seen_rgb) = true;
      if (seen_int && seen_rgb)
        throw ConfigError(where + ": LabelIDs mixes integers and RGB triplets (use one kind for every class)");
      uint8_t& slot = v.size() == 1 ? grey_[size_t(v[0])]
                                    : colour_.try_emplace(pack(v[0], v[1], v[2]), kUndefinedPixel).first->second;
      if (slot != kUndefinedPixel)
        throw ConfigError(where + ": value " + value_str(v) + " is given to both class '" + class_names_[slot] +
                          "' and " + cls);
      slot = static_cast<uint8_t>(c);
    }
  }
  rgb_ = seen_rgb;
}

uint8_t PixelLabelIds::class_of(uint8_t r, uint8_t g, uint8_t b) const {
  auto it = colour_.find(pack(r, g, b));
  return it == colour_.end() ? kUndefinedPixel : it->second;
}

std::vector<std::array<uint8_t, 3>> PixelLabelIds::colours() const {
  std::vector<std::array<uint8_t, 3>> out;
  for (const auto& values : ids_) {
    const auto& v = values.front();
    if (v.size() == 3)
      out.push_back({uint8_t(v[0]), uint8_t(v[1]), uint8_t(v[2])});
    else
      out.push_back({uint8_t(v[0]), uint8_t(v[0]), uint8_t(v[0])});
  }
  return out;
}

void PixelLabelIds::decode(const std::string& path, Image& out) const {
  thread_local Image raw;
  decode_image_as_stored(path, raw);
  if (rgb_ && raw.channels != 3)
    throw DataError(path + ": label image is greyscale but LabelIDs are RGB triplets (give integer LabelIDs)");
  if (!rgb_ && raw.channels != 1)
    throw DataError(path + ": label image is in colour but LabelIDs are integers (give RGB triplets, e.g. [[128, 128, 128]])");
  out.reset(raw.height, raw.width, 1);
  const size_t n = size_t(raw.height) * raw.width;
  const uint8_t* src = raw.pixels.data();
  uint8_t* dst = out.pixels.data();
  if (rgb_) {
    for (size_t i = 0; i < n; ++i) dst[i] = class_of(src[3 * i], src[3 * i + 1], src[3 * i + 2]);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = grey_[src[i]];
  }
}

void resize_nearest(const Image& in, int height, int width, Image& out) {
  out.reset(height, width, in.channels);
  const int c = in.channels;
  std::vector<int> xs(static_cast<size_t>(width));
  for (int x = 0; x < width; ++x)  // centre of the output pixel in input coordinates
    xs[size_t(x)] = std::clamp(int(std::floor((x + 0.5) * in.width / width)), 0, in.width - 1);
  for (int y = 0; y < height; ++y) {
    const int sy = std::clamp(int(std::floor((y + 0.5) * in.height / height)), 0, in.height - 1);
    uint8_t* d = out.at(y, 0);
    for (int x = 0; x < width; ++x) std::copy_n(in.at(sy, xs[size_t(x)]), c, d + size_t(x) * c);
  }
}

}  // namespace dlt
