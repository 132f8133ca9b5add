// The table datasets of make-dataset: rotated-digits (each image is its source digit rotated
// by the table's angle, checked against a rotation written here from complex numbers, and the
// angle recovered by search) and shapes-multi (the labels are the shapes drawn, checked by
// counting the bright blobs in the image).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <fstream>
#include <map>

#include "data/binary_datasets.h"
#include "data/decode.h"
#include "data/rotated_digits.h"
#include "data/shapes_multi.h"
#include "data/table.h"
#include "data_test_util.h"
#include "util/error.h"
#include "util/files.h"

using namespace dlt;
using dlt::test::TempDir;

namespace {

constexpr double kPi = 3.14159265358979323846;

// An IDX image file of `count` 28x28 "7"s: a bar along the top and a stroke down the right,
// shifted by the image's index so that no two are the same.
void write_idx(const std::string& path, int count) {
  std::string bytes;
  auto be32 = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) bytes += char((v >> s) & 0xff);
  };
  be32(0x803);
  be32(uint32_t(count));
  be32(28);
  be32(28);
  for (int i = 0; i < count; ++i)
    for (int y = 0; y < 28; ++y)
      for (int x = 0; x < 28; ++x) {
        const bool bar = y >= 5 + i % 3 && y <= 8 + i % 3 && x >= 6 && x <= 21;
        const bool stroke = x >= 17 - i % 4 && x <= 20 - i % 4 && y >= 5 && y <= 23;
        bytes += char(bar || stroke ? 255 : 0);
      }
  test::write_file(path, bytes);
}

Image digit(int i) {  // the same digit as write_idx's i-th
  Image img(28, 28, 1);
  for (int y = 0; y < 28; ++y)
    for (int x = 0; x < 28; ++x) {
      const bool bar = y >= 5 + i % 3 && y <= 8 + i % 3 && x >= 6 && x <= 21;
      const bool stroke = x >= 17 - i % 4 && x <= 20 - i % 4 && y >= 5 && y <= 23;
      img.at(y, x)[0] = bar || stroke ? 255 : 0;
    }
  return img;
}

// Counter-clockwise as displayed by `deg`: with y pointing down, a displayed counter-clockwise
// turn multiplies x + iy by e^(-i deg), so each output pixel reads the source at z e^(i deg).
// Bilinear, pixels outside the image are 0.
std::vector<double> rotated(const Image& src, double deg) {
  const int h = src.height, w = src.width;
  const std::complex<double> turn = std::polar(1.0, deg * kPi / 180);
  const std::complex<double> centre((w - 1) / 2.0, (h - 1) / 2.0);
  auto px = [&](int y, int x) { return y < 0 || x < 0 || y >= h || x >= w ? 0.0 : double(src.at(y, x)[0]); };
  std::vector<double> out(size_t(h) * w);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::complex<double> s = (std::complex<double>(x, y) - centre) * turn + centre;
      const int x0 = int(std::floor(s.real())), y0 = int(std::floor(s.imag()));
      const double ax = s.real() - x0, ay = s.imag() - y0;
      out[size_t(y) * w + x] = (1 - ax) * (1 - ay) * px(y0, x0) + ax * (1 - ay) * px(y0, x0 + 1) +
                               (1 - ax) * ay * px(y0 + 1, x0) + ax * ay * px(y0 + 1, x0 + 1);
    }
  return out;
}

double distance(const Image& img, const std::vector<double>& ref) {
  double d = 0;
  for (size_t i = 0; i < ref.size(); ++i) d += std::abs(img.pixels[i] - ref[i]);
  return d;
}

// Connected (4-neighbour) groups of at least `least` pixels whose channel mean is >= 130.
int bright_blobs(const Image& img, int least) {
  const int h = img.height, w = img.width;
  std::vector<int> seen(size_t(h) * w, 0);
  auto bright = [&](int y, int x) {
    const uint8_t* p = img.at(y, x);
    return (p[0] + p[1] + p[2]) / 3.0 >= 130;
  };
  int blobs = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      if (seen[size_t(y) * w + x] || !bright(y, x)) continue;
      std::vector<std::pair<int, int>> stack = {{y, x}};
      seen[size_t(y) * w + x] = 1;
      int size = 0;
      while (!stack.empty()) {
        auto [cy, cx] = stack.back();
        stack.pop_back();
        ++size;
        const int ny[4] = {cy - 1, cy + 1, cy, cy}, nx[4] = {cx, cx, cx - 1, cx + 1};
        for (int k = 0; k < 4; ++k)
          if (ny[k] >= 0 && nx[k] >= 0 && ny[k] < h && nx[k] < w && !seen[size_t(ny[k]) * w + nx[k]] &&
              bright(ny[k], nx[k])) {
            seen[size_t(ny[k]) * w + nx[k]] = 1;
            stack.push_back({ny[k], nx[k]});
          }
      }
      blobs += size >= least;
    }
  return blobs;
}

}  // namespace

TEST_CASE("rotate_image turns counter-clockwise as displayed (imrotate's sense)", "[data][table]") {
  Image img(9, 9, 1);
  img.at(4, 7)[0] = 200;  // right of the centre (4, 4)
  const Image up = rotate_image(img, 90);
  CHECK(int(up.at(1, 4)[0]) == 200);  // now above it
  CHECK(int(up.at(4, 7)[0]) == 0);
  const Image down = rotate_image(img, -90);
  CHECK(int(down.at(7, 4)[0]) == 200);
}

TEST_CASE("rotated-digits: each image is its digit rotated by the table's angle", "[data][table]") {
  TempDir d;
  write_idx(d / "idx/train-images-idx3-ubyte", 7);
  write_idx(d / "idx/t10k-images-idx3-ubyte", 6);
  RotatedDigitsOptions o;
  o.from = d / "idx";
  o.count = 5;
  o.seed = 3;
  CHECK(write_rotated_digits(d / "out", o) == 10);
  std::vector<double> angles;
  for (const char* part : {"train", "test"}) {
    const ImageTable t = read_image_table(d / "out/" + std::string(part) + ".csv");
    REQUIRE(t.response_names == std::vector<std::string>{"Angle"});
    REQUIRE(t.files.size() == 5);
    for (size_t i = 0; i < 5; ++i) {
      CHECK(t.files[i] == d / "out/" + std::string(part) + "/0000" + std::to_string(i) + ".png");
      const double angle = t.targets[i];
      CHECK(std::abs(angle) <= 45);
      angles.push_back(angle);
      Image img;
      decode_image_as_stored(t.files[i], img);
      REQUIRE(img.height == 28);
      REQUIRE(img.width == 28);
      REQUIRE(img.channels == 1);
      const Image src = digit(int(i));
      // The rotation written here, at the table's angle, gives the same pixels (+-2 for rounding).
      const std::vector<double> ref = rotated(src, angle);
      double worst = 0;
      for (size_t k = 0; k < ref.size(); ++k) worst = std::max(worst, std::abs(img.pixels[k] - ref[k]));
      CHECK(worst <= 2);
      // And the angle that best explains the image, searched in 0.25 degree steps, is the table's.
      double best = 0, best_d = 1e300;
      for (double a = -50; a <= 50; a += 0.25) {
        const double dist = distance(img, rotated(src, a));
        if (dist < best_d) best_d = dist, best = a;
      }
      CHECK(std::abs(best - angle) <= 0.5);
    }
  }
  std::sort(angles.begin(), angles.end());
  CHECK(std::unique(angles.begin(), angles.end()) == angles.end());  // drawn per image
  CHECK(angles.back() - angles.front() > 20);

  // The same seed writes the same table, another seed other angles.
  write_rotated_digits(d / "again", o);
  CHECK(read_file(d / "again/train.csv") == read_file(d / "out/train.csv"));
  o.seed = 4;
  write_rotated_digits(d / "other", o);
  CHECK(read_file(d / "other/train.csv") != read_file(d / "out/train.csv"));
  o.count = 7;  // t10k has 6
  CHECK_THROWS_AS(write_rotated_digits(d / "big", o), UsageError);
  o.from = d / "none";
  CHECK_THROWS_AS(write_rotated_digits(d / "none_out", o), DataError);
}

TEST_CASE("shapes-multi: the labels are the shapes drawn", "[data][table]") {
  std::map<size_t, int> by_count;
  for (int i = 0; i < 40; ++i) {
    Rng rng = Rng::derive(9, {kShapesMultiStream, uint64_t(i)});
    const ShapesMultiSample s = render_shapes_multi(8, 48, 48, rng);
    REQUIRE(!s.kinds.empty());
    REQUIRE(s.kinds.size() <= 3);
    REQUIRE(s.poses.size() == s.kinds.size());
    std::vector<int> kinds = s.kinds;
    std::sort(kinds.begin(), kinds.end());
    CHECK(std::unique(kinds.begin(), kinds.end()) == kinds.end());
    ++by_count[s.kinds.size()];
    // Each listed shape is one bright blob; nothing else is.
    CHECK(bright_blobs(s.image, 6) == int(s.kinds.size()));
    // Where a listed shape covers whole pixels the image is bright.
    for (size_t k = 0; k < s.kinds.size(); ++k) {
      const std::vector<float> cov = shape_coverage(s.kinds[k], s.poses[k], 48, 48);
      int whole = 0, bright = 0;
      for (size_t p = 0; p < cov.size(); ++p)
        if (cov[p] == 1.f) {
          ++whole;
          const uint8_t* px = &s.image.pixels[p * 3];
          bright += (px[0] + px[1] + px[2]) / 3.0 >= 125;
        }
      CHECK(whole > 10);
      CHECK(bright == whole);
    }
  }
  CHECK(by_count.size() == 3);  // 1, 2 and 3 shapes all occur

  TempDir d;
  ShapesMultiOptions o;
  o.classes = 5;
  o.count = 10;
  o.height = o.width = 40;
  o.seed = 2;
  CHECK(write_shapes_multi_dataset(d / "m", o) == 10);
  const ImageTable train = read_image_table(d / "m/train.csv");
  const ImageTable test = read_image_table(d / "m/test.csv");
  REQUIRE(train.files.size() == 8);
  REQUIRE(test.files.size() == 2);
  CHECK(train.kind == TargetKind::kMultiLabel);
  for (const auto& c : train.classes)
    CHECK(std::find(shape_class_names().begin(), shape_class_names().begin() + 5, c) !=
          shape_class_names().begin() + 5);
  for (int i = 0; i < 10; ++i) {  // each row lists the kinds of sample i, and the PNG is its image
    Rng rng = Rng::derive(2, {kShapesMultiStream, uint64_t(i)});
    const ShapesMultiSample s = render_shapes_multi(5, 40, 40, rng);
    const ImageTable& t = i < 8 ? train : test;
    const size_t row = size_t(i < 8 ? i : i - 8);
    std::vector<std::string> want, got;
    for (int k : s.kinds) want.push_back(shape_class_names()[k]);
    for (size_t c = 0; c < t.classes.size(); ++c)
      if (t.targets[row * t.classes.size() + c] == 1.f) got.push_back(t.classes[c]);
    std::sort(want.begin(), want.end());
    CHECK(got == want);
    CHECK(decode_image(t.files[row], 3).pixels == s.image.pixels);
  }
  o.classes = 1;
  CHECK_THROWS_AS(write_shapes_multi_dataset(d / "bad", o), UsageError);
}
