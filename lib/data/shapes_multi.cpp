// Multi-label shapes: shape_coverage (shapes.cpp) per shape, placed with disjoint circumcircles,
// blended over the background, plus Gaussian pixel noise.
#include "data/shapes_multi.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "data/encode.h"
#include "util/error.h"
#include "util/files.h"
#include "util/strings.h"

namespace dlt {
namespace {
constexpr double kPi = 3.14159265358979323846;
}  // namespace

ShapesMultiSample render_shapes_multi(int classes, int height, int width, Rng& rng) {
  const size_t n_px = size_t(height) * width;
  double bg[3];
  for (int k = 0; k < 3; ++k) bg[k] = rng.uniform(0, 110);
  const double noise = rng.uniform(2, 8);
  // 1..min(3, classes) distinct kinds (a partial Fisher-Yates shuffle).
  const int n_shapes = 1 + static_cast<int>(rng.below(uint64_t(std::min(3, classes))));
  std::vector<int> order(classes);
  for (int c = 0; c < classes; ++c) order[c] = c;
  for (int s = 0; s < n_shapes; ++s) std::swap(order[s], order[s + rng.below(uint64_t(classes - s))]);

  std::vector<double> rgb(n_px * 3);  // (height, width, 3) before noise
  for (size_t p = 0; p < n_px; ++p)
    for (int k = 0; k < 3; ++k) rgb[p * 3 + k] = bg[k];
  ShapesMultiSample out;
  const double side = std::min(height, width);
  for (int s = 0; s < n_shapes; ++s) {
    double fg[3];
    for (int k = 0; k < 3; ++k) fg[k] = rng.uniform(150, 255);
    ShapePose pose;
    pose.radius = side * rng.uniform(0.14, 0.22);
    pose.angle = rng.uniform(0, 2 * kPi);
    bool clear = false;  // a place whose circumcircle meets no other shape's
    for (int attempt = 0; attempt < 30 && !clear; ++attempt) {
      pose.cx = rng.uniform(pose.radius * 0.8, width - pose.radius * 0.8);
      pose.cy = rng.uniform(pose.radius * 0.8, height - pose.radius * 0.8);
      clear = true;
      for (const ShapePose& q : out.poses)
        clear = clear && std::hypot(pose.cx - q.cx, pose.cy - q.cy) > 1.2 * (pose.radius + q.radius) + 2;
    }
    if (!clear) continue;
    const std::vector<float> cov = shape_coverage(order[s], pose, height, width);
    for (size_t p = 0; p < n_px; ++p) {
      const double a = cov[p];
      if (a != 0)
        for (int k = 0; k < 3; ++k) rgb[p * 3 + k] = a * fg[k] + (1 - a) * rgb[p * 3 + k];
    }
    out.kinds.push_back(order[s]);
    out.poses.push_back(pose);
  }
  out.image = Image(height, width, 3);
  for (size_t p = 0; p < n_px * 3; ++p)
    out.image.pixels[p] = static_cast<uint8_t>(std::clamp(std::lround(rgb[p] + noise * rng.normal()), 0L, 255L));
  return out;
}

int64_t write_shapes_multi_dataset(const std::string& dir, const ShapesMultiOptions& o) {
  namespace fs = std::filesystem;
  const int max_classes = static_cast<int>(shape_class_names().size());
  if (o.classes < 2 || o.classes > max_classes)
    throw UsageError("--classes " + std::to_string(o.classes) + " must be 2.." + std::to_string(max_classes));
  if (o.count < 1) throw UsageError("--count must be at least 1");
  if (o.height < 16 || o.width < 16 || o.height > 4096 || o.width > 4096)
    throw UsageError("--size must be between 16x16 and 4096x4096");
  if (!(o.test_fraction >= 0 && o.test_fraction < 1)) throw UsageError("--split must be in [0, 1)");
  const int test_count = static_cast<int>(std::lround(o.count * o.test_fraction));
  std::string csv[2] = {"File,Labels\n", "File,Labels\n"};
  const char* parts[2] = {"train", "test"};
  for (const char* part : parts) make_dirs((fs::path(dir) / part).string());
  for (int i = 0; i < o.count; ++i) {
    Rng rng = Rng::derive(o.seed, {kShapesMultiStream, uint64_t(i)});
    const ShapesMultiSample sample = render_shapes_multi(o.classes, o.height, o.width, rng);
    const int p = i < o.count - test_count ? 0 : 1;
    char file[32];
    std::snprintf(file, sizeof file, "%05d.png", i);
    write_image((fs::path(dir) / parts[p] / file).string(), sample.image);
    std::vector<std::string> names;
    for (int k : sample.kinds) names.push_back(shape_class_names()[k]);
    std::sort(names.begin(), names.end());
    csv[p] += std::string(parts[p]) + "/" + file + "," + join(names, ";") + "\n";
  }
  for (int p = 0; p < 2; ++p) write_file_atomic((fs::path(dir) / (std::string(parts[p]) + ".csv")).string(), csv[p]);
  return o.count;
}

}  // namespace dlt
