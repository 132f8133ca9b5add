// Transforms: resize, crops, exact reflections and translations, reproducible augmentation.
#include <catch2/catch.hpp>

#include <cstdlib>

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

// imageDataAugmenter's RandXShear / RandYShear and RandXScale / RandYScale about the centre
// (2, 2) of a 5x5 image: a 45-degree horizontal shear moves row y by y - 2 pixels (x' = x +
// tan(45) (y - 2)), a vertical one column x by x - 2; a horizontal scale of 2 samples column
// 2 + (x - 2) / 2 (the half columns the mean of their neighbours, bilinear).
TEST_CASE("axis shear and scale move pixels as their matrices say", "[data]") {
  const Image img = test::pattern_image(5, 5, 1, 3);
  Image out;
  AffineDraw hx;
  hx.shear_x_deg = 45;
  warp_affine(img, hx, out);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 5; ++x) {
      const int sx = x - (y - 2);
      INFO("x shear, output (" << y << ", " << x << ")");
      CHECK(out.at(y, x)[0] == (sx >= 0 && sx < 5 ? img.at(y, sx)[0] : 0));
    }
  AffineDraw hy;
  hy.shear_y_deg = -45;
  warp_affine(img, hy, out);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 5; ++x) {
      const int sy = y + (x - 2);
      INFO("y shear, output (" << y << ", " << x << ")");
      CHECK(out.at(y, x)[0] == (sy >= 0 && sy < 5 ? img.at(sy, x)[0] : 0));
    }
  AffineDraw sx;
  sx.scale_x = 2;
  warp_affine(img, sx, out);
  for (int y = 0; y < 5; ++y) {
    CHECK(out.at(y, 0)[0] == img.at(y, 1)[0]);
    CHECK(out.at(y, 2)[0] == img.at(y, 2)[0]);
    CHECK(out.at(y, 4)[0] == img.at(y, 3)[0]);
    const int mean = (img.at(y, 1)[0] + img.at(y, 2)[0]);  // column 1.5, rounded as the warp rounds
    CHECK(std::abs(2 * out.at(y, 1)[0] - mean) <= 1);
  }
  AffineDraw sy;
  sy.scale_y = 0.5;  // rows 2 + 2 (y - 2): rows 0 and 4 come from outside, zero
  warp_affine(img, sy, out);
  for (int x = 0; x < 5; ++x) {
    CHECK(out.at(1, x)[0] == img.at(0, x)[0]);
    CHECK(out.at(2, x)[0] == img.at(2, x)[0]);
    CHECK(out.at(3, x)[0] == img.at(4, x)[0]);
    CHECK(out.at(0, x)[0] == 0);
  }
  // Drawn from their ranges: values inside them, fixed ends returned as they are.
  AugmentOptions o;
  o.rand_x_shear[0] = -10;
  o.rand_x_shear[1] = 20;
  o.rand_y_scale[0] = o.rand_y_scale[1] = 1.5;
  for (uint64_t s = 0; s < 10; ++s) {
    Rng rng(s);
    const AffineDraw d = draw_affine(o, rng);
    CHECK(d.shear_x_deg >= -10);
    CHECK(d.shear_x_deg <= 20);
    CHECK(d.scale_y == 1.5);
    CHECK(d.scale_x == 1);
    CHECK(d.shear_y_deg == 0);
  }
}

// FillValue (imageDataAugmenter's): what comes in from outside, per channel or one for all; at
// the border a bilinear sample weighs it in (a half-pixel shift: the mean of the edge pixel and
// the fill).
TEST_CASE("warp and PadCrop fill with FillValue", "[data]") {
  const Image img = test::pattern_image(4, 5, 3, 7);
  Image out;
  AffineDraw t;
  t.tx = 2;  // content moves right by 2: columns 0 and 1 come from outside
  warp_affine(img, t, out, {10, 20, 30});
  for (int y = 0; y < 4; ++y)
    for (int k = 0; k < 3; ++k) {
      CHECK(out.at(y, 0)[k] == 10 * (k + 1));
      CHECK(out.at(y, 1)[k] == 10 * (k + 1));
      CHECK(out.at(y, 2)[k] == img.at(y, 0)[k]);
    }
  AffineDraw half;
  half.tx = 0.5;  // column 0 samples x = -0.5: half the fill, half pixel 0
  AugmentOptions one;
  one.fill_value = {200};  // one FillValue for every channel
  warp_affine(img, half, out, pixel_fill(one, 3));
  for (int y = 0; y < 4; ++y)
    for (int k = 0; k < 3; ++k) CHECK(std::abs(2 * out.at(y, 0)[k] - (200 + img.at(y, 0)[k])) <= 1);
  // Without FillValue: zeros, as before.
  warp_affine(img, t, out);
  CHECK(out.at(0, 0)[0] == 0);
  bool filled = false;
  for (uint64_t s = 0; s < 20; ++s) {
    Rng rng(s);
    pad_crop(img, 1, rng, out, PixelFill{99, 99, 99});
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 5; ++x) {
        const uint8_t v = out.at(y, x)[2];
        filled |= v == 99;
      }
  }
  CHECK(filled);
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
