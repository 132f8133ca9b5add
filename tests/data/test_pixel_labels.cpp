// Label images through ClassNames / LabelIDs: index and RGB decoding, undefined values,
// the configuration errors, and nearest-neighbour resizing.
#include <catch2/catch.hpp>

#include "data/decode.h"
#include "data/encode.h"
#include "data/pixel_labels.h"
#include "data_test_util.h"
#include "util/error.h"

using namespace dlt;
using Catch::Matchers::Contains;

namespace {

using Ids = std::vector<std::vector<std::vector<int64_t>>>;

std::string config_error(const std::vector<std::string>& names, const Ids& ids) {
  try {
    PixelLabelIds p(names, ids, "c.yaml:7: data.LabelIDs");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("pixel labels: index images map values to classes, unmapped values are undefined") {
  test::TempDir dir;
  Image lab(2, 3, 1);
  const uint8_t values[6] = {0, 1, 11, 7, 1, 200};
  std::copy(values, values + 6, lab.pixels.begin());
  write_image(dir / "a.png", lab);
  // Two values for one class (as camvidPixelLabelIDs gives several colours per class).
  PixelLabelIds ids({"sky", "road", "car"}, Ids{{{0}}, {{1}, {7}}, {{200}}}, "t");
  CHECK(ids.num_classes() == 3);
  CHECK_FALSE(ids.rgb());
  Image out;
  ids.decode(dir / "a.png", out);
  REQUIRE(out.channels == 1);
  REQUIRE(out.height == 2);
  REQUIRE(out.width == 3);
  const std::vector<uint8_t> want = {0, 1, kUndefinedPixel, 1, 1, 2};
  CHECK(out.pixels == want);
}

TEST_CASE("pixel labels: RGB label images map colours, an unknown colour is undefined") {
  test::TempDir dir;
  Image lab(1, 4, 3);
  const uint8_t px[12] = {128, 128, 128, 128, 0, 0, 64, 0, 128, 1, 2, 3};
  std::copy(px, px + 12, lab.pixels.begin());
  write_image(dir / "rgb.png", lab);
  PixelLabelIds ids({"Sky", "Building", "Car"}, Ids{{{128, 128, 128}}, {{128, 0, 0}, {0, 128, 64}}, {{64, 0, 128}}},
                    "t");
  CHECK(ids.rgb());
  Image out;
  ids.decode(dir / "rgb.png", out);
  const std::vector<uint8_t> want = {0, 1, 2, kUndefinedPixel};
  CHECK(out.pixels == want);
  CHECK(ids.colours()[1] == std::array<uint8_t, 3>{128, 0, 0});
  // A grey label image with RGB LabelIDs, and the other way round, are clear errors.
  Image grey(2, 2, 1);
  write_image(dir / "g.png", grey);
  CHECK_THROWS_WITH(ids.decode(dir / "g.png", out), Contains("g.png") && Contains("greyscale"));
  PixelLabelIds ints({"a"}, Ids{{{0}}}, "t");
  CHECK_THROWS_WITH(ints.decode(dir / "rgb.png", out), Contains("rgb.png") && Contains("colour"));
  CHECK_THROWS_AS(ints.decode(dir / "missing.png", out), DataError);
}

TEST_CASE("pixel labels: bad ClassNames / LabelIDs are one line naming the place") {
  CHECK_THAT(config_error({}, {}), Contains("c.yaml:7") && Contains("empty"));
  CHECK_THAT(config_error({"a", "b", "c"}, Ids{{{0}}, {{1}}}), Contains("3 classes") && Contains("2 entries"));
  CHECK_THAT(config_error({"a"}, Ids{{}}), Contains("'a' has no label value"));
  CHECK_THAT(config_error({"a"}, Ids{{{256}}}), Contains("outside 0..255"));
  CHECK_THAT(config_error({"a"}, Ids{{{1, 2}}}), Contains("RGB triplet"));
  CHECK_THAT(config_error({"a", "b"}, Ids{{{1}}, {{1, 2, 3}}}), Contains("mixes"));
  CHECK_THAT(config_error({"a", "b"}, Ids{{{4}}, {{4}}}), Contains("value 4") && Contains("'a'") && Contains("'b'"));
  std::vector<std::string> many(256, "x");
  CHECK_THAT(config_error(many, Ids(256, {{{0}}})), Contains("at most 255"));
}

TEST_CASE("pixel labels: nearest-neighbour resize never blends classes") {
  Image in(2, 2, 1);
  in.pixels = {0, 1, 2, 3};
  Image out;
  resize_nearest(in, 4, 4, out);
  const std::vector<uint8_t> up = {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3};
  CHECK(out.pixels == up);
  resize_nearest(out, 2, 2, in);
  const std::vector<uint8_t> down = {0, 1, 2, 3};
  CHECK(in.pixels == down);
  // 3 -> 2 columns: output centres 0.75 and 2.25 take columns 0 and 2.
  Image row(1, 3, 1);
  row.pixels = {5, 6, 7};
  resize_nearest(row, 1, 2, out);
  const std::vector<uint8_t> two = {5, 7};
  CHECK(out.pixels == two);
}
