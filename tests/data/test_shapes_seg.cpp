// Shapes segmentation generator: determinism, label values, labels where the shapes are, and
// the train/test image/label pairs read back through PixelLabelIds.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "data/decode.h"
#include "data/pixel_labels.h"
#include "data/shapes_seg.h"
#include "data_test_util.h"
#include "util/error.h"

using namespace dlt;
using dlt::test::TempDir;

namespace {

std::vector<std::string> sorted_names(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename());
  return {names.begin(), names.end()};
}

}  // namespace

TEST_CASE("render_shapes_seg: deterministic; labels 0..K or void; labels where the shapes are", "[data]") {
  Rng a = Rng::derive(9, {4}), b = Rng::derive(9, {4}), c = Rng::derive(10, {4});
  const ShapesSegSample x = render_shapes_seg(5, 32, 40, a), y = render_shapes_seg(5, 32, 40, b);
  CHECK(x.image.pixels == y.image.pixels);
  CHECK(x.label.pixels == y.label.pixels);
  CHECK(render_shapes_seg(5, 32, 40, c).image.pixels != x.image.pixels);
  CHECK(x.image.height == 32);
  CHECK(x.image.width == 40);
  CHECK(x.image.channels == 3);
  CHECK(x.label.channels == 1);

  constexpr int kClasses = 5, kImages = 200;
  std::vector<int64_t> count(256, 0);
  double shape_sum = 0, bg_sum = 0;
  int64_t shape_n = 0, bg_n = 0;
  for (int i = 0; i < kImages; ++i) {
    Rng rng = Rng::derive(1, {uint64_t(i)});
    const ShapesSegSample s = render_shapes_seg(kClasses, 32, 32, rng);
    std::set<int> classes_here;
    double img_shape = 0, img_bg = 0;
    int img_shape_n = 0, img_bg_n = 0;
    for (size_t p = 0; p < s.label.pixels.size(); ++p) {
      const int v = s.label.pixels[p];
      ++count[v];
      const double grey = (s.image.pixels[3 * p] + s.image.pixels[3 * p + 1] + s.image.pixels[3 * p + 2]) / 3.0;
      if (v >= 1 && v <= kClasses) {
        classes_here.insert(v);
        img_shape += grey;
        ++img_shape_n;
      } else if (v == 0) {
        img_bg += grey;
        ++img_bg_n;
      }
    }
    // 1..4 shapes, each leaving labelled pixels; shapes (>= 150 per channel, at least 3/4 of a
    // labelled pixel) are brighter than the background (<= 110) in every image.
    CHECK(classes_here.size() >= 1);
    CHECK(classes_here.size() <= 4);
    REQUIRE(img_shape_n > 0);
    REQUIRE(img_bg_n > 0);
    CHECK(img_shape / img_shape_n > img_bg / img_bg_n + 25);
    shape_sum += img_shape;
    shape_n += img_shape_n;
    bg_sum += img_bg;
    bg_n += img_bg_n;
  }
  // Only 0..K and 255 occur, every class occurs, void is a thin edge (a few % of pixels).
  int64_t total = 0;
  for (int v = 0; v < 256; ++v) {
    if (v > kClasses && v != kShapesSegVoid) CHECK(count[v] == 0);
    total += count[v];
  }
  for (int v = 0; v <= kClasses; ++v) CHECK(count[v] > 0);
  CHECK(total == int64_t(kImages) * 32 * 32);
  const double void_share = double(count[kShapesSegVoid]) / total;
  CHECK(void_share > 0.01);
  CHECK(void_share < 0.15);
  CHECK(double(count[0]) / total > 0.4);  // mostly background
  // Means: shape colours are uniform in 150..255 (mean ~200), backgrounds in 0..110 (~55).
  CHECK(shape_sum / shape_n > 170);
  CHECK(bg_sum / bg_n < 70);
}

TEST_CASE("write_shapes_seg_dataset: paired train/test images and labels; deterministic", "[data]") {
  TempDir t1, t2;
  ShapesSegOptions o;
  o.classes = 3;
  o.count = 10;
  o.height = 24;
  o.width = 32;
  o.seed = 7;
  o.test_fraction = 0.3;
  CHECK(write_shapes_seg_dataset(t1.str(), o) == 10);
  write_shapes_seg_dataset(t2.str(), o);
  const std::vector<std::string> train = {"00000.png", "00001.png", "00002.png", "00003.png",
                                          "00004.png", "00005.png", "00006.png"};
  const std::vector<std::string> test = {"00007.png", "00008.png", "00009.png"};
  CHECK(sorted_names(t1 / "train/images") == train);
  CHECK(sorted_names(t1 / "train/labels") == train);
  CHECK(sorted_names(t1 / "test/images") == test);
  CHECK(sorted_names(t1 / "test/labels") == test);

  // The lines make-dataset prints: background + the first 3 shapes, values 0..3.
  CHECK(shapes_seg_class_names(3) == std::vector<std::string>{"background", "circle", "square", "triangle"});
  PixelLabelIds ids(shapes_seg_class_names(3), {{{0}}, {{1}}, {{2}}, {{3}}}, "test");
  for (const char* part : {"train", "test"}) {
    for (const std::string& f : std::string(part) == "train" ? train : test) {
      const std::string rel = std::string(part) + "/";
      // Same seed, same files; each file equals the sample rendered from its own stream.
      const Image img = decode_image(t1 / (rel + "images/" + f), 3);
      CHECK(img.pixels == decode_image(t2 / (rel + "images/" + f), 3).pixels);
      Image stored;
      decode_image_as_stored(t1 / (rel + "labels/" + f), stored);
      CHECK(stored.channels == 1);
      const int index = std::stoi(f.substr(0, 5));
      Rng rng = Rng::derive(7, {kShapesSegStream, uint64_t(index)});
      const ShapesSegSample s = render_shapes_seg(3, 24, 32, rng);
      CHECK(img.pixels == s.image.pixels);
      CHECK(stored.pixels == s.label.pixels);
      // Through LabelIDs [0, 1, 2, 3]: 255 is undefined, the rest their own index.
      Image classes;
      ids.decode(t1 / (rel + "labels/" + f), classes);
      CHECK(classes.pixels == s.label.pixels);
    }
  }
  o.classes = 9;
  CHECK_THROWS_AS(write_shapes_seg_dataset(t1.str(), o), UsageError);
  o.classes = 3;
  o.count = 0;
  CHECK_THROWS_AS(write_shapes_seg_dataset(t1.str(), o), UsageError);
  o.count = 5;
  o.height = 8;
  CHECK_THROWS_AS(write_shapes_seg_dataset(t1.str(), o), UsageError);
}
