// Shapes segmentation rendering: shape_coverage (shapes.cpp) per shape, composited in drawing
// order over the background; each pixel's label is the layer (background or shape) whose
// visible share of the pixel is largest, or void when that share is below kShapesSegSure.
#include "data/shapes_seg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "data/encode.h"
#include "data/shapes.h"
#include "util/error.h"

namespace dlt {
namespace {

constexpr double kPi = 3.14159265358979323846;

// A position for a shape of `radius` inside the image, away from the shapes already placed
// when the rng finds such a place within a few tries (else the last try: shapes then overlap
// and the later one occludes the earlier, which the label follows).
void place(ShapePose& pose, const std::vector<ShapePose>& placed, int height, int width, Rng& rng) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    pose.cx = rng.uniform(pose.radius * 0.8, width - pose.radius * 0.8);
    pose.cy = rng.uniform(pose.radius * 0.8, height - pose.radius * 0.8);
    bool apart = true;
    for (const ShapePose& q : placed)
      apart = apart && std::hypot(pose.cx - q.cx, pose.cy - q.cy) >= 0.9 * (pose.radius + q.radius);
    if (apart) return;
  }
}

}  // namespace

std::vector<std::string> shapes_seg_class_names(int classes) {
  std::vector<std::string> names = {"background"};
  for (int c = 0; c < classes; ++c) names.push_back(shape_class_names().at(c));
  return names;
}

ShapesSegSample render_shapes_seg(int classes, int height, int width, Rng& rng) {
  const size_t n_px = size_t(height) * width;
  double bg[3];
  for (int k = 0; k < 3; ++k) bg[k] = rng.uniform(0, 110);
  const double noise = rng.uniform(2, 8);
  // 1..min(4, classes) shapes of distinct classes (a partial Fisher-Yates shuffle).
  const int n_shapes = 1 + static_cast<int>(rng.below(std::min(4, classes)));
  std::vector<int> order(classes);
  for (int c = 0; c < classes; ++c) order[c] = c;
  for (int s = 0; s < n_shapes; ++s) std::swap(order[s], order[s + rng.below(classes - s)]);

  std::vector<double> rgb(n_px * 3);  // (height, width, 3) before noise
  for (size_t p = 0; p < n_px; ++p)
    for (int k = 0; k < 3; ++k) rgb[p * 3 + k] = bg[k];
  // visible[l][p]: the share of pixel p that layer l shows (0 background, s + 1 shape s).
  std::vector<std::vector<double>> visible(n_shapes + 1, std::vector<double>(n_px, 0.0));
  std::fill(visible[0].begin(), visible[0].end(), 1.0);
  std::vector<ShapePose> placed;
  const double side = std::min(height, width);
  for (int s = 0; s < n_shapes; ++s) {
    double fg[3];
    for (int k = 0; k < 3; ++k) fg[k] = rng.uniform(150, 255);
    ShapePose pose;
    pose.radius = side * rng.uniform(0.16, 0.28);
    place(pose, placed, height, width, rng);
    pose.angle = rng.uniform(0, 2 * kPi);
    placed.push_back(pose);
    const std::vector<float> cov = shape_coverage(order[s], pose, height, width);
    for (size_t p = 0; p < n_px; ++p) {
      const double a = cov[p];
      if (a == 0) continue;
      for (int k = 0; k < 3; ++k) rgb[p * 3 + k] = a * fg[k] + (1 - a) * rgb[p * 3 + k];
      for (int l = 0; l <= s; ++l) visible[l][p] *= 1 - a;
      visible[s + 1][p] = a;
    }
  }

  ShapesSegSample out{Image(height, width, 3), Image(height, width, 1)};
  for (size_t p = 0; p < n_px; ++p) {
    int best = 0;
    for (int l = 1; l <= n_shapes; ++l)
      if (visible[l][p] > visible[best][p]) best = l;
    out.label.pixels[p] = visible[best][p] < kShapesSegSure ? kShapesSegVoid
                          : best == 0                       ? 0
                                                            : uint8_t(order[best - 1] + 1);
    for (int k = 0; k < 3; ++k) {
      const double val = rgb[p * 3 + k] + noise * rng.normal();
      out.image.pixels[p * 3 + k] = static_cast<uint8_t>(std::clamp(std::lround(val), 0L, 255L));
    }
  }
  return out;
}

int64_t write_shapes_seg_dataset(const std::string& dir, const ShapesSegOptions& o) {
  namespace fs = std::filesystem;
  const int max_classes = static_cast<int>(shape_class_names().size());
  if (o.classes < 1 || o.classes > max_classes)
    throw UsageError("--classes " + std::to_string(o.classes) + " must be 1.." + std::to_string(max_classes));
  if (o.count < 1) throw UsageError("--count must be at least 1");
  if (o.height < 16 || o.width < 16 || o.height > 4096 || o.width > 4096)
    throw UsageError("--size must be between 16x16 and 4096x4096");
  if (!(o.test_fraction >= 0 && o.test_fraction < 1)) throw UsageError("--split must be in [0, 1)");
  const int test_count = static_cast<int>(std::lround(o.count * o.test_fraction));
  for (const char* part : {"train", "test"}) {
    for (const char* kind : {"images", "labels"}) {
      std::error_code ec;
      const fs::path folder = fs::path(dir) / part / kind;
      fs::create_directories(folder, ec);
      if (ec) throw DataError(folder.string() + ": cannot create folder: " + ec.message());
    }
  }
  for (int i = 0; i < o.count; ++i) {
    Rng rng = Rng::derive(o.seed, {kShapesSegStream, uint64_t(i)});
    const ShapesSegSample sample = render_shapes_seg(o.classes, o.height, o.width, rng);
    char file[32];
    std::snprintf(file, sizeof file, "%05d.png", i);
    const fs::path part = fs::path(dir) / (i < o.count - test_count ? "train" : "test");
    write_image((part / "images" / file).string(), sample.image);
    write_image((part / "labels" / file).string(), sample.label);
  }
  return o.count;
}

}  // namespace dlt
