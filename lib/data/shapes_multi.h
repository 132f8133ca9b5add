// A synthetic multi-label classification task: 1-3 non-overlapping bright shapes of different
// kinds (shapes.h's circle, square, triangle, ...) of random hue, size, position and rotation
// on a dark random-hue background with pixel noise; the labels are the kinds drawn. Written as
// PNGs and File,Labels tables (data/table.h) by `dltrain make-dataset shapes-multi`.
// Deterministic from the seed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"
#include "data/shapes.h"
#include "util/rng.h"

namespace dlt {

struct ShapesMultiSample {
  Image image;                   // (height, width, 3)
  std::vector<int> kinds;        // the kinds drawn (indices into shape_class_names()), distinct
  std::vector<ShapePose> poses;  // where each was drawn; their circumcircles do not overlap
};

// One image with 1..min(3, classes) shapes of kinds 0..classes-1. A shape for which no place
// clear of the others is found is left out (and not listed), so every listed shape is whole
// apart from what the image's edge cuts.
ShapesMultiSample render_shapes_multi(int classes, int height, int width, Rng& rng);

struct ShapesMultiOptions {
  int classes = 4;
  int count = 1000;  // images, train + test together
  int height = 32, width = 32;
  uint64_t seed = 0;
  double test_fraction = 0.2;
};
// Sample i is render_shapes_multi(.., rng) with rng = Rng::derive(seed, {kShapesMultiStream, i}).
constexpr uint64_t kShapesMultiStream = 0x3A17;
// Writes DIR/train/NNNNN.png and DIR/test/NNNNN.png (RGB; the last round(count *
// test_fraction) samples in test/) and DIR/train.csv, DIR/test.csv with the header File,Labels
// (File relative to DIR; Labels the kinds' names, sorted, separated by ';'). Every file goes
// through a temporary name and a rename. Throws UsageError for out-of-range options and
// DataError / Error when the folder cannot be written. Returns the number of images.
int64_t write_shapes_multi_dataset(const std::string& dir, const ShapesMultiOptions& options);

}  // namespace dlt
