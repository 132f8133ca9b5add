// argmax, class colours and labeloverlay's blend by hand.
#include <catch2/catch.hpp>
#include <set>

#include "data/label_images.h"
#include "data/pixel_labels.h"

using namespace dlt;

TEST_CASE("argmax_classes: the largest probability, the lowest index among equals", "[label_images]") {
  // 1x3 pixels, 3 classes: (0.2 0.5 0.3) -> 1; (0.4 0.4 0.2) -> 0 (tie); (0.1 0.2 0.7) -> 2.
  const float p[] = {0.2f, 0.5f, 0.3f, 0.4f, 0.4f, 0.2f, 0.1f, 0.2f, 0.7f};
  Image out;
  argmax_classes(p, 1, 3, 3, out);
  REQUIRE(out.channels == 1);
  CHECK(out.pixels == std::vector<uint8_t>{1, 0, 2});
}

TEST_CASE("colourize and overlay: labeloverlay's Transparency 0.5, undefined left alone", "[label_images]") {
  Image classes(1, 3, 1);
  classes.pixels = {0, 1, kUndefinedPixel};
  const std::vector<Colour> colours = {Colour{10, 20, 30}, Colour{255, 0, 101}};
  Image c = colourize(classes, colours);
  CHECK(c.pixels == std::vector<uint8_t>{10, 20, 30, 255, 0, 101, 0, 0, 0});
  Image img(1, 3, 3);
  img.pixels = {100, 100, 100, 0, 255, 0, 7, 8, 9};
  Image o = overlay(img, classes, colours);
  // (100+10)/2 = 55, (100+20)/2 = 60, (100+30)/2 = 65; (0+255)/2 = 127.5 -> 128,
  // (255+0)/2 -> 128, (0+101)/2 = 50.5 -> 51; undefined keeps 7 8 9.
  CHECK(o.pixels == std::vector<uint8_t>{55, 60, 65, 128, 128, 51, 7, 8, 9});
  Image small(1, 2, 3);
  CHECK_THROWS(overlay(small, classes, colours));
}

TEST_CASE("distinct_colours: MATLAB's lines first, all distinct", "[label_images]") {
  auto c = distinct_colours(40);
  CHECK(c[0] == Colour{0, 114, 189});
  CHECK(c[1] == Colour{217, 83, 25});
  std::set<Colour> seen(c.begin(), c.end());
  CHECK(seen.size() == 40);
}
