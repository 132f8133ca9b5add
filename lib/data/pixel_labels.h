// pixelLabelDatastore's label images: ClassNames and LabelIDs map each pixel value (an integer
// in grey / index images, an RGB triplet in colour-coded ones) to a class; a value that maps to
// no class is undefined and counts in no loss and no metric. Label images are decoded into
// 1-channel Images holding the class index, kUndefinedPixel where undefined, so the cache and
// the geometric transforms (nearest-neighbour sampling) work on them as on images.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/image.h"

namespace dlt {

constexpr uint8_t kUndefinedPixel = 255;  // at most 255 classes: 0..254
constexpr int kMaxPixelClasses = 255;

class PixelLabelIds {
 public:
  PixelLabelIds() = default;
  // ids[c] lists the values of class c: each one integer in 0..255 or an RGB triplet, all of
  // one kind. Throws ConfigError prefixed by `where` (e.g. "config.yaml:12: data.LabelIDs")
  // for no classes, more than 255, ClassNames and LabelIDs of different lengths, a class with
  // no value, a value out of 0..255, mixed integers and triplets, or a value given twice.
  PixelLabelIds(std::vector<std::string> class_names, const std::vector<std::vector<std::vector<int64_t>>>& ids,
                const std::string& where);

  int num_classes() const { return static_cast<int>(class_names_.size()); }
  const std::vector<std::string>& class_names() const { return class_names_; }
  bool rgb() const { return rgb_; }
  // The first value of each class as an RGB colour (an integer v gives (v, v, v)): the colours
  // `dltrain segment --colour` writes, so its output reads back through the same LabelIDs.
  std::vector<std::array<uint8_t, 3>> colours() const;
  // The mapping as text ("0;1,7;200"), part of the label cache's key.
  std::string key() const;

  // Decodes the label image at `path` into `out` (1 channel, class index or kUndefinedPixel).
  // Throws DataError naming the file: unreadable or corrupt, a colour image when LabelIDs are
  // integers, a grey image when they are RGB triplets.
  void decode(const std::string& path, Image& out) const;
  // The class of an RGB colour; kUndefinedPixel when none.
  uint8_t class_of(uint8_t r, uint8_t g, uint8_t b) const;

 private:
  std::vector<std::string> class_names_;
  std::vector<std::vector<std::vector<int64_t>>> ids_;
  bool rgb_ = false;
  std::array<uint8_t, 256> grey_{};
  std::unordered_map<uint32_t, uint8_t> colour_;
};

// Nearest-neighbour resize of a label image (pixel centres mapped as in resize_bilinear, the
// nearest source pixel taken): class indices are never blended.
void resize_nearest(const Image& in, int height, int width, Image& out);

}  // namespace dlt
