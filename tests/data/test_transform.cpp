// Transforms: resize, crops, exact reflections and translations, reproducible augmentation.
#include <catch2/catch.hpp>

#include "data/transform.h"
#include "data_test_util.h"
#include "util/error.h"

using namespace dlt;

TEST_CASE("resize_bilinear keeps constants and averages when halving", "[data]") {
  Image flat(6, 10, 3);
  std::fill(flat.pixels.begin(), flat.pixels.end(), 77);
  Image out;
  resize_bilinear(flat, 4, 3, out);
  REQUIRE(out.height == 4);
  REQUIRE(out.width == 3);
  for (uint8_t v : out.pixels) CHECK(v == 77);

  // Halving widens the triangle to radius 2: output 0 (centre 0.5) weighs columns 0, 1, 2 by
  // 0.75, 0.75, 0.25 -> (0 + 0 + 25) / 1.75 = 14.3; output 1 mirrors it: 85.7.
  Image step(2, 4, 1);
  step.pixels = {0, 0, 100, 100, 0, 0, 100, 100};
  resize_bilinear(step, 1, 2, out);
  CHECK(out.pixels == std::vector<uint8_t>{14, 86});

  Image two(1, 2, 1);  // upscaling 2 -> 4 interpolates between the pixel centres
  two.pixels = {0, 200};
  resize_bilinear(two, 1, 4, out);
  CHECK(out.pixels == std::vector<uint8_t>{0, 50, 150, 200});
}

TEST_CASE("crops and the too-small error", "[data]") {
  const Image img = test::pattern_image(5, 6, 1);
  Image out;
  center_crop(img, 3, 2, "x.png", out);
  CHECK(out.pixels[0] == img.at(1, 2)[0]);
  Rng rng(1);
  random_crop(img, 5, 6, "x.png", rng, out);
  CHECK(out.pixels == img.pixels);
  try {
    center_crop(img, 8, 4, "dir/small.png", out);
    FAIL("no error");
  } catch (const DataError& e) {
    const std::string m = e.what();
    CHECK(m.find("dir/small.png") != std::string::npos);
    CHECK(m.find("5x6") != std::string::npos);
    CHECK(m.find("8x4") != std::string::npos);
  }
}

TEST_CASE("reflection and integer translation are exact", "[data]") {
  const Image img = test::pattern_image(3, 4, 2);
  Image out;
  AffineDraw fx;
  fx.flip_x = true;
  warp_affine(img, fx, out);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x)
      for (int k = 0; k < 2; ++k) CHECK(out.at(y, x)[k] == img.at(y, 3 - x)[k]);
  AffineDraw fy;
  fy.flip_y = true;
  warp_affine(img, fy, out);
  for (int x = 0; x < 4; ++x) CHECK(out.at(0, x)[1] == img.at(2, x)[1]);
  AffineDraw t;
  t.tx = 1;
  t.ty = -1;  // content moves right by 1 and up by 1, zero fill
  warp_affine(img, t, out);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) {
      const int sy = y + 1, sx = x - 1;
      const uint8_t want = (sy < 3 && sx >= 0) ? img.at(sy, sx)[0] : 0;
      CHECK(out.at(y, x)[0] == want);
    }
  AffineDraw r;
  r.rotation_deg = 180;  // 180 degrees about the centre = both flips
  warp_affine(img, r, out);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) CHECK(out.at(y, x)[0] == img.at(2 - y, 3 - x)[0]);
}

TEST_CASE("pad_crop shifts with zero fill", "[data]") {
  const Image img = test::pattern_image(4, 4, 1, 9);
  Image out;
  bool moved = false;
  for (uint64_t s = 0; s < 20; ++s) {
    Rng rng(s);
    pad_crop(img, 1, rng, out);
    int zeros = 0;
    for (uint8_t v : out.pixels) zeros += v == 0;
    moved |= zeros > 0;
    CHECK(zeros <= 7);  // at most one row and one column are padding
  }
  CHECK(moved);
}

TEST_CASE("augmentation is reproducible per (seed, epoch, index)", "[data]") {
  AugmentOptions o;
  o.rand_x_reflection = true;
  o.rand_rotation[0] = -20;
  o.rand_rotation[1] = 20;
  o.rand_scale[0] = 0.8;
  o.rand_scale[1] = 1.2;
  o.rand_x_translation[0] = -2;
  o.rand_x_translation[1] = 2;
  o.pad_crop = 2;
  const Image src = test::pattern_image(12, 12, 3);
  auto run = [&](uint64_t seed, uint64_t epoch, uint64_t index) {
    Image img = src, scratch;
    Rng rng = Rng::derive(seed, {epoch, index});
    augment(img, o, rng, scratch);
    return img.pixels;
  };
  CHECK(run(1, 2, 3) == run(1, 2, 3));
  CHECK(run(1, 2, 3) != run(1, 2, 4));
  CHECK(run(1, 2, 3) != run(1, 3, 3));
  CHECK(run(1, 2, 3) != run(2, 2, 3));
  CHECK(run(1, 2, 3) != src.pixels);
}
