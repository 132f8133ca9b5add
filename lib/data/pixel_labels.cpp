// Label-image decoding through ClassNames / LabelIDs, and nearest-neighbour resizing.
#include "data/pixel_labels.h"

#include <algorithm>
#include <cmath>

#include "config/options.h"
#include "data/decode.h"
#include "util/error.h"

namespace dlt {

namespace {

uint32_t pack(int64_t r, int64_t g, int64_t b) { return uint32_t(r) << 16 | uint32_t(g) << 8 | uint32_t(b); }

}  // namespace

PixelLabelIds::PixelLabelIds(std::vector<std::string> class_names,
                             const std::vector<std::vector<std::vector<int64_t>>>& ids, const std::string& where)
    : class_names_(std::move(class_names)), ids_(ids) {
  const std::string problem = label_ids_problem(class_names_, ids_);
  if (!problem.empty()) throw ConfigError(where + ": " + problem);
  grey_.fill(kUndefinedPixel);
  for (size_t c = 0; c < ids_.size(); ++c)
    for (const auto& v : ids_[c]) {
      rgb_ = v.size() == 3;
      if (rgb_)
        colour_[pack(v[0], v[1], v[2])] = static_cast<uint8_t>(c);
      else
        grey_[size_t(v[0])] = static_cast<uint8_t>(c);
    }
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

std::string PixelLabelIds::key() const {
  std::string k;
  for (const auto& values : ids_) {
    for (const auto& v : values) {
      for (int64_t x : v) k += std::to_string(x) + ".";
      k += ",";
    }
    k += ";";
  }
  return k;
}

void PixelLabelIds::decode(const std::string& path, Image& out) const {
  thread_local Image raw;
  decode_image_as_stored(path, raw);
  if (rgb_ && raw.channels != 3)
    throw DataError(path + ": label image is greyscale but LabelIDs are RGB triplets (give integer LabelIDs)");
  if (!rgb_ && raw.channels != 1)
    throw DataError(path +
                    ": label image is in colour but LabelIDs are integers (give RGB triplets, e.g. [[128, 128, 128]])");
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
