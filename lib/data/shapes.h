// A synthetic but real classification task: bright shapes (circle, square, triangle, cross,
// ring, star, hexagon, half-disc) of random hue, position, scale and rotation on a dark
// random-hue background with pixel noise, anti-aliased. Deterministic from the seed. Used by
// `dltrain make-dataset shapes` and the end-to-end tests.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"
#include "util/rng.h"

namespace dlt {

// Every shape class name, in label order; at most this many classes.
const std::vector<std::string>& shape_class_names();

// Where a shape lies: centre (cx, cy) and circumradius in pixels, rotation in radians.
struct ShapePose {
  double cx = 0, cy = 0, radius = 1, angle = 0;
};

// Coverage in [0, 1] (4x4 supersampled, so a multiple of 1/16) of shape `label` at `pose` on
// each pixel of a height x width grid, row-major (height * width). Zero outside the shape's
// bounding box; the shape may extend past the grid's edges.
std::vector<float> shape_coverage(int label, const ShapePose& pose, int height, int width);

// One image of class `label` (index into shape_class_names()) drawn from rng.
Image render_shape(int label, int height, int width, Rng& rng);

struct ShapesDatasetOptions {
  int classes = 4;
  int per_class = 1000;  // images per class, train + test together
  int height = 32, width = 32;
  uint64_t seed = 0;
  double test_fraction = 0.2;
};
// Writes DIR/train/<class>/NNNNN.png and DIR/test/<class>/NNNNN.png (each file written to a
// temporary name and renamed). Throws DataError when the folder cannot be written and
// UsageError for out-of-range options. Returns the number of files written.
int64_t write_shapes_dataset(const std::string& dir, const ShapesDatasetOptions& options);

}  // namespace dlt
