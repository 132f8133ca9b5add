// A synthetic semantic-segmentation task: 1-4 bright shapes of different classes (the shapes of
// shapes.h, anti-aliased, random hue, position, scale and rotation, later ones occluding
// earlier ones) on a dark random-hue background with pixel noise, and a label image giving each
// pixel's class. Deterministic from the seed. Used by `dltrain make-dataset shapes-seg`.
// Deliberately not here: reading the pairs back (that is the pixel-label datastore's job).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"
#include "util/rng.h"

namespace dlt {

// Label values: 0 background, 1..K the shape classes, kShapesSegVoid where no class covers at
// least kShapesSegSure of the pixel (anti-aliased edges: coverage about 0.25..0.75).
constexpr uint8_t kShapesSegVoid = 255;
constexpr double kShapesSegSure = 0.75;

// "background" then the first `classes` names of shape_class_names(): label value = index.
std::vector<std::string> shapes_seg_class_names(int classes);

struct ShapesSegSample {
  Image image;  // (height, width, 3)
  Image label;  // (height, width, 1): 0..classes or kShapesSegVoid
};

// One image and its label with shapes of classes 0..classes-1 (label values 1..classes).
ShapesSegSample render_shapes_seg(int classes, int height, int width, Rng& rng);

struct ShapesSegOptions {
  int classes = 4;
  int count = 1000;  // image/label pairs, train + test together
  int height = 32, width = 32;
  uint64_t seed = 0;
  double test_fraction = 0.2;
};
// Sample i of a dataset is render_shapes_seg(.., rng) with rng = Rng::derive(seed,
// {kShapesSegStream, i}): apart from the `shapes` dataset's streams.
constexpr uint64_t kShapesSegStream = 0x5E6;
// Writes DIR/{train,test}/images/NNNNN.png (RGB) and DIR/{train,test}/labels/NNNNN.png (8-bit
// grey, same name = same sample); the last round(count * test_fraction) samples go to test/.
// Each file is written to a temporary name and renamed. Throws UsageError for out-of-range
// options and DataError when the folder cannot be written. Returns the number of pairs.
int64_t write_shapes_seg_dataset(const std::string& dir, const ShapesSegOptions& options);

}  // namespace dlt
