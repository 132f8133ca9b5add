// Shapes generator (shape coverage, deterministic by seed, balanced folders) and the binary
// converters.
#include <catch2/catch.hpp>
#include <fstream>
#include <numeric>

#include "data/binary_datasets.h"
#include "data/datastore.h"
#include "data/decode.h"
#include "data/shapes.h"
#include "data_test_util.h"
#include "util/error.h"

using namespace dlt;
using dlt::test::TempDir;

namespace {
double sum(const std::vector<float>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
}  // namespace

TEST_CASE("shape_coverage: areas and the bounding box", "[data]") {
  ShapePose pose;
  pose.cx = 20;
  pose.cy = 21;
  pose.radius = 10;
  pose.angle = 0.3;
  // circle r = 0.9 radius: pi * 81 = 254.5 px; square of side 1.5 radius: 225 px.
  CHECK(sum(shape_coverage(0, pose, 40, 40)) == Approx(254.47).epsilon(0.01));
  CHECK(sum(shape_coverage(1, pose, 40, 40)) == Approx(225.0).epsilon(0.01));
  // ring 0.55..0.95: pi * (90.25 - 30.25) = 188.5 px.
  CHECK(sum(shape_coverage(4, pose, 40, 40)) == Approx(188.50).epsilon(0.01));
  const std::vector<float> c = shape_coverage(0, pose, 40, 40);
  CHECK(c[21 * 40 + 20] == 1.0f);  // centre
  CHECK(c[21 * 40 + 31] == 0.0f);  // 11 px right: outside r = 9
  CHECK(c[0] == 0.0f);
  // Half off the grid: the half that is inside.
  pose.cx = 0;
  CHECK(sum(shape_coverage(1, pose, 40, 40)) == Approx(112.5).epsilon(0.01));
}

TEST_CASE("render_shape is bit-identical to before shape_coverage was split out", "[data]") {
  // FNV-1a of the pixels from the pre-refactor shapes.cpp (commit e70ba67), same draws.
  const std::vector<std::pair<int, uint64_t>> expected = {
      {0, 0x3ccffa15e3e0ad40ULL}, {2, 0xd785b17bea6b99c7ULL}, {5, 0xa15b03dcc81a503dULL}, {7, 0xf06e2404784964b2ULL}};
  for (const auto& [label, fnv] : expected) {
    Rng rng = Rng::derive(5, {1, 2});
    const Image img = render_shape(label, 24, 20, rng);
    uint64_t h = 1469598103934665603ULL;
    for (uint8_t p : img.pixels) h = (h ^ p) * 1099511628211ULL;
    CHECK(h == fnv);
  }
}

TEST_CASE("render_shape is deterministic by seed and classes differ", "[data]") {
  Rng a = Rng::derive(5, {1, 2}), b = Rng::derive(5, {1, 2}), c = Rng::derive(6, {1, 2});
  const Image x = render_shape(2, 24, 24, a), y = render_shape(2, 24, 24, b);
  CHECK(x.pixels == y.pixels);
  CHECK(render_shape(2, 24, 24, c).pixels != x.pixels);
  // Same draws, other class: a different picture.
  Rng d = Rng::derive(5, {1, 2});
  CHECK(render_shape(4, 24, 24, d).pixels != x.pixels);
}

TEST_CASE("write_shapes_dataset writes train/test class folders", "[data]") {
  TempDir t1, t2;
  ShapesDatasetOptions o;
  o.classes = 3;
  o.per_class = 5;
  o.height = o.width = 16;
  o.seed = 3;
  o.test_fraction = 0.4;
  CHECK(write_shapes_dataset(t1.str(), o) == 15);
  write_shapes_dataset(t2.str(), o);
  ImageDatastore train(t1 / "train", DataOptions{}), test(t1 / "test", DataOptions{});
  CHECK(train.classes() == std::vector<std::string>{"circle", "square", "triangle"});
  CHECK(train.count_each_label() == std::vector<int64_t>{3, 3, 3});
  CHECK(test.count_each_label() == std::vector<int64_t>{2, 2, 2});
  for (int64_t i = 0; i < train.size(); ++i) {
    const std::string rel = train.path(i).substr(t1.str().size());
    CHECK(decode_image(train.path(i), 3).pixels == decode_image(t2.str() + rel, 3).pixels);
  }
  o.classes = 9;
  CHECK_THROWS_AS(write_shapes_dataset(t1.str(), o), UsageError);
}

TEST_CASE("CIFAR-10 binary and MNIST IDX converters", "[data]") {
  TempDir src, dest;
  {  // 3 records per batch file, labels r % 10, pixel (R plane) = label
    for (const char* f : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                          "data_batch_5.bin", "test_batch.bin"}) {
      std::string bytes;
      for (int r = 0; r < 3; ++r) {
        bytes += char(r);
        bytes += std::string(1024, char(10 * r)) + std::string(1024, char(1)) + std::string(1024, char(2));
      }
      test::write_file(src / f, bytes);
    }
  }
  CHECK(convert_cifar10_binary(src.str(), dest / "c") == 18);
  ImageDatastore train(dest / "c/train", DataOptions{});
  CHECK(train.size() == 15);
  CHECK(train.classes()[1] == "automobile");
  const Image img = decode_image(dest / "c/train/bird/00000.png", 3);
  CHECK(img.height == 32);
  CHECK(std::vector<int>{img.pixels[0], img.pixels[1], img.pixels[2]} == std::vector<int>{20, 1, 2});

  auto idx = [](uint32_t magic, std::vector<uint32_t> dims, const std::string& data) {
    std::string s;
    for (uint32_t v : std::vector<uint32_t>{magic}) dims.insert(dims.begin(), v);
    for (uint32_t v : dims)
      for (int k = 3; k >= 0; --k) s += char((v >> (8 * k)) & 0xFF);
    return s + data;
  };
  for (const char* part : {"train", "t10k"}) {
    test::write_file(src / (std::string(part) + "-images-idx3-ubyte"),
                     idx(0x803, {2, 3, 2}, std::string(6, char(9)) + std::string(6, char(200))));
    test::write_file(src / (std::string(part) + "-labels-idx1-ubyte"), idx(0x801, {2}, std::string{char(7), char(3)}));
  }
  CHECK(convert_mnist_idx(src.str(), dest / "m") == 4);
  const Image d3 = decode_image(dest / "m/test/3/00000.png", 1);
  CHECK(d3.height == 3);
  CHECK(d3.width == 2);
  CHECK(int(d3.pixels[5]) == 200);
  test::write_file(src / "train-images-idx3-ubyte", "garbage bytes here!");
  CHECK_THROWS_AS(convert_mnist_idx(src.str(), dest / "m2"), DataError);
}
