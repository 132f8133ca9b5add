// Shapes rendering: an inside-test per class in shape coordinates (radius 1), 4x4 supersampled
// coverage (shape_coverage, shared with shapes_seg.cpp), blended over a background colour, plus
// Gaussian pixel noise.
#include "data/shapes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "data/encode.h"
#include "util/error.h"

namespace dlt {
namespace {

constexpr double kPi = 3.14159265358979323846;

bool in_polygon(double u, double v, const double* xs, const double* ys, int n) {
  bool in = false;
  for (int i = 0, j = n - 1; i < n; j = i++) {
    if ((ys[i] > v) != (ys[j] > v) && u < (xs[j] - xs[i]) * (v - ys[i]) / (ys[j] - ys[i]) + xs[i]) in = !in;
  }
  return in;
}

bool in_regular(double u, double v, int sides, double inner_ratio) {
  // Regular polygon (inner_ratio 0) or star (alternating radii) with circumradius 1.
  const int n = inner_ratio > 0 ? 2 * sides : sides;
  double xs[16], ys[16];
  for (int k = 0; k < n; ++k) {
    const double a = -kPi / 2 + 2 * kPi * k / n;
    const double r = (inner_ratio > 0 && k % 2) ? inner_ratio : 1.0;
    xs[k] = r * std::cos(a);
    ys[k] = r * std::sin(a);
  }
  return in_polygon(u, v, xs, ys, n);
}

bool inside(int label, double u, double v) {
  const double r = std::sqrt(u * u + v * v);
  switch (label) {
    case 0:
      return r <= 0.9;  // circle
    case 1:
      return std::max(std::abs(u), std::abs(v)) <= 0.75;  // square
    case 2:
      return in_regular(u, v + 0.15, 3, 0);  // triangle
    case 3:
      return (std::abs(u) <= 0.28 && std::abs(v) <= 0.95) ||  // cross
             (std::abs(v) <= 0.28 && std::abs(u) <= 0.95);
    case 4:
      return r <= 0.95 && r >= 0.55;  // ring
    case 5:
      return in_regular(u, v, 5, 0.42);  // star
    case 6:
      return in_regular(u, v, 6, 0);  // hexagon
    default:
      return r <= 0.95 && v <= 0.25;  // half-disc
  }
}

}  // namespace

const std::vector<std::string>& shape_class_names() {
  static const std::vector<std::string> names = {"circle", "square", "triangle", "cross",
                                                 "ring",   "star",   "hexagon",  "halfdisc"};
  return names;
}

std::vector<float> shape_coverage(int label, const ShapePose& pose, int height, int width) {
  std::vector<float> cov(size_t(height) * width, 0.0f);
  // Every shape lies within 1.15 radii of its centre (the triangle's shifted vertices).
  const double reach = 1.2 * pose.radius + 1;
  const int y0 = std::max(0, int(std::floor(pose.cy - reach)));
  const int y1 = std::min(height, int(std::ceil(pose.cy + reach)) + 1);
  const int x0 = std::max(0, int(std::floor(pose.cx - reach)));
  const int x1 = std::min(width, int(std::ceil(pose.cx + reach)) + 1);
  const double ca = std::cos(pose.angle), sa = std::sin(pose.angle);
  constexpr int kSub = 4;
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      int hits = 0;
      for (int sy = 0; sy < kSub; ++sy) {
        for (int sx = 0; sx < kSub; ++sx) {
          const double px = x + (sx + 0.5) / kSub - pose.cx, py = y + (sy + 0.5) / kSub - pose.cy;
          const double u = (ca * px + sa * py) / pose.radius, v = (-sa * px + ca * py) / pose.radius;
          hits += inside(label, u, v);
        }
      }
      cov[size_t(y) * width + x] = float(hits) / (kSub * kSub);
    }
  }
  return cov;
}

Image render_shape(int label, int height, int width, Rng& rng) {
  Image img(height, width, 3);
  // Dark background, bright shape (every channel), random hues: the colour carries no label.
  double bg[3], fg[3];
  for (int k = 0; k < 3; ++k) bg[k] = rng.uniform(0, 110);
  for (int k = 0; k < 3; ++k) fg[k] = rng.uniform(150, 255);
  const double side = std::min(height, width);
  ShapePose pose;
  pose.radius = side * rng.uniform(0.3, 0.45);
  pose.cx = rng.uniform(pose.radius * 0.8, width - pose.radius * 0.8);
  pose.cy = rng.uniform(pose.radius * 0.8, height - pose.radius * 0.8);
  pose.angle = rng.uniform(0, 2 * kPi);
  const double noise = rng.uniform(2, 8);
  const std::vector<float> cov = shape_coverage(label, pose, height, width);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double a = cov[size_t(y) * width + x];
      uint8_t* p = img.at(y, x);
      for (int k = 0; k < 3; ++k) {
        const double val = a * fg[k] + (1 - a) * bg[k] + noise * rng.normal();
        p[k] = static_cast<uint8_t>(std::clamp(std::lround(val), 0L, 255L));
      }
    }
  }
  return img;
}

int64_t write_shapes_dataset(const std::string& dir, const ShapesDatasetOptions& o) {
  namespace fs = std::filesystem;
  const int max_classes = static_cast<int>(shape_class_names().size());
  if (o.classes < 2 || o.classes > max_classes)
    throw UsageError("--classes " + std::to_string(o.classes) + " must be 2.." + std::to_string(max_classes));
  if (o.per_class < 1) throw UsageError("--per-class must be at least 1");
  if (o.height < 8 || o.width < 8 || o.height > 4096 || o.width > 4096)
    throw UsageError("--size must be between 8x8 and 4096x4096");
  if (!(o.test_fraction >= 0 && o.test_fraction < 1)) throw UsageError("--split must be in [0, 1)");
  const int test_count = static_cast<int>(std::lround(o.per_class * o.test_fraction));
  int64_t written = 0;
  for (int c = 0; c < o.classes; ++c) {
    const std::string& name = shape_class_names()[c];
    for (const char* part : {"train", "test"}) {
      std::error_code ec;
      fs::create_directories(fs::path(dir) / part / name, ec);
      if (ec) throw DataError((fs::path(dir) / part / name).string() + ": cannot create folder: " + ec.message());
    }
    for (int i = 0; i < o.per_class; ++i) {
      Rng rng = Rng::derive(o.seed, {uint64_t(c), uint64_t(i)});
      const Image img = render_shape(c, o.height, o.width, rng);
      char file[32];
      std::snprintf(file, sizeof file, "%05d.png", i);
      const char* part = i < o.per_class - test_count ? "train" : "test";
      write_image((fs::path(dir) / part / name / file).string(), img);
      ++written;
    }
  }
  return written;
}

}  // namespace dlt
