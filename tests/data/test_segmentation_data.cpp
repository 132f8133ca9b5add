// Segmentation data: pixel-label pairs by stem (and every pairing error), the batch loader's
// (N, H, W) labels with -1 for undefined pixels, nearest resizing, the joint augmentation
// (image and labels stay aligned), countEachLabel and median-frequency weights.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "data/batch_loader.h"
#include "data/datastore.h"
#include "data_test_util.h"
#include "train/class_weights.h"
#include "util/error.h"

using namespace dlt;
using Catch::Matchers::Contains;
using dlt::test::TempDir;

namespace {

DataOptions seg_options(const TempDir& d, int classes = 3) {
  DataOptions o;
  o.train = d / "images";
  o.train_labels = d / "labels";
  for (int c = 0; c < classes; ++c) {
    o.class_names.push_back("c" + std::to_string(c));
    o.label_ids.push_back({{c}});
  }
  return o;
}

// An image whose grey level is a function of its label: class c -> 40 + 60 c; labels in
// 8x8 blocks of class (bx + 2 by) % 3; the last block column is labelled 9 (no class:
// undefined). Pixels are RGB with that grey level.
void write_pair(const TempDir& d, const std::string& stem, int h, int w) {
  Image img(h, w, 3), lab(h, w, 1);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int bx = x / 8, by = y / 8;
      const bool undefined = bx == (w - 1) / 8;
      const int c = (bx + 2 * by) % 3;
      lab.at(y, x)[0] = uint8_t(undefined ? 9 : c);
      for (int k = 0; k < 3; ++k) img.at(y, x)[k] = uint8_t(40 + 60 * c);
    }
  test::put_image(d / ("images/" + stem + ".png"), img);
  test::put_image(d / ("labels/" + stem + ".png"), lab);
}

LoaderOptions seg_loader(int h, int w) {
  LoaderOptions o;
  o.input = Shape{h, w, 3};
  o.batch_size = 2;
  o.shuffle = Shuffle::kNever;
  o.drop_last = false;
  o.training = false;
  o.threads = 2;
  o.cache = Cache::kNone;
  return o;
}

}  // namespace

TEST_CASE("segmentation data: images and label images pair by file stem", "[data][segmentation]") {
  TempDir d;
  write_pair(d, "b", 16, 16);
  write_pair(d, "a", 16, 16);
  ImageDatastore ds = ImageDatastore::pixel_pairs(d / "images", d / "labels", seg_options(d));
  REQUIRE(ds.size() == 2);
  CHECK(ds.has_pixel_labels());
  CHECK(ds.path(0) == d / "images/a.png");
  CHECK(ds.label_path(0) == d / "labels/a.png");
  CHECK(ds.label_path(1) == d / "labels/b.png");
  CHECK(ds.classes() == std::vector<std::string>{"c0", "c1", "c2"});
  // Subsets and splits keep the pairs.
  auto parts = ds.split_each_label(0.5, 3);
  REQUIRE(parts.first.size() == 1);
  CHECK(parts.first.label_path(0).substr(parts.first.label_path(0).size() - 5) ==
        parts.first.path(0).substr(parts.first.path(0).size() - 5));

  SECTION("an image without a label image names it") {
    test::put_image(d / "images/c.png", Image(16, 16, 3));
    CHECK_THROWS_WITH(ImageDatastore::pixel_pairs(d / "images", d / "labels", seg_options(d)),
                      Contains("images/c.png") && Contains("no label image"));
  }
  SECTION("a label image without an image names it") {
    test::put_image(d / "labels/z.png", Image(16, 16, 1));
    CHECK_THROWS_WITH(ImageDatastore::pixel_pairs(d / "images", d / "labels", seg_options(d)),
                      Contains("labels/z.png") && Contains("no image"));
  }
  SECTION("a missing labels folder names it") {
    CHECK_THROWS_WITH(ImageDatastore::pixel_pairs(d / "images", d / "nolabels", seg_options(d)),
                      Contains("nolabels") && Contains("does not exist"));
  }
}

TEST_CASE("segmentation loader: (N, H, W) labels, undefined -1, nearest resize, size mismatch",
          "[data][segmentation]") {
  TempDir d;
  write_pair(d, "p0", 16, 24);
  write_pair(d, "p1", 16, 24);
  ImageDatastore ds = ImageDatastore::pixel_pairs(d / "images", d / "labels", seg_options(d));
  {
    BatchLoader loader(ds, seg_loader(16, 24));
    Batch b;
    loader.start_epoch(0);
    REQUIRE(loader.next(b));
    REQUIRE(b.labels.shape() == Shape{2, 16, 24});
    const int32_t* l = b.labels.data_i32();
    CHECK(l[0] == 0);                        // block (0, 0)
    CHECK(l[8] == 1);                        // block (1, 0)
    CHECK(l[16] == -1);                      // the last block column: value 9 maps to no class
    CHECK(l[8 * 24 + 0] == 2);               // block (0, 1)
    CHECK(b.images.data()[8 * 3] == 100.f);  // class 1's grey
  }
  {  // Halved: every label is a label of the source, never a blend (classes 0..2 or -1).
    BatchLoader loader(ds, seg_loader(8, 12));
    Batch b;
    loader.start_epoch(0);
    REQUIRE(loader.next(b));
    REQUIRE(b.labels.shape() == Shape{2, 8, 12});
    const int32_t* l = b.labels.data_i32();
    CHECK(l[0] == 0);
    CHECK(l[4] == 1);
    CHECK(l[11] == -1);
  }
  // A label image of another size than its image.
  test::put_image(d / "labels/p1.png", Image(15, 24, 1));
  BatchLoader loader(ds, seg_loader(16, 24));
  Batch b;
  loader.start_epoch(0);
  CHECK_THROWS_WITH(loader.next(b), Contains("labels/p1.png") && Contains("15x24") && Contains("16x24"));
}

TEST_CASE("segmentation loader: joint augmentation keeps image and labels aligned", "[data][segmentation]") {
  TempDir d;
  for (int i = 0; i < 4; ++i) write_pair(d, "q" + std::to_string(i), 32, 40);
  ImageDatastore ds = ImageDatastore::pixel_pairs(d / "images", d / "labels", seg_options(d));
  LoaderOptions o = seg_loader(32, 40);
  o.batch_size = 4;
  o.training = true;
  o.seed = 11;
  auto run = [&](const AugmentOptions& aug, double min_agreement) {
    o.augment = aug;
    BatchLoader loader(ds, o);
    int64_t labelled = 0, agree = 0, outside = 0;
    for (int epoch = 0; epoch < 3; ++epoch) {
      loader.start_epoch(epoch);
      Batch b;
      while (loader.next(b)) {
        const float* px = b.images.data();
        const int32_t* l = b.labels.data_i32();
        for (int64_t i = 0; i < b.labels.numel(); ++i) {
          if (l[i] < 0) {
            outside += px[3 * i] == 0.f;  // brought in from outside: black image, undefined label
            continue;
          }
          ++labelled;
          agree += std::abs(px[3 * i] - float(40 + 60 * l[i])) < 0.5f;
        }
      }
    }
    REQUIRE(labelled > 0);
    CHECK(double(agree) / double(labelled) >= min_agreement);
    return outside;
  };
  AugmentOptions exact;  // reflections and PadCrop's whole-pixel shifts move pixels exactly
  exact.rand_x_reflection = exact.rand_y_reflection = true;
  exact.pad_crop = 3;
  CHECK(run(exact, 1.0) > 0);  // some pixels came from outside the image
  // Sub-pixel translation, rotation and scale: labels nearest, the image bilinear, so pixels
  // whose 2x2 source neighbourhood straddles a block edge are blends (about 1 - (7/8)^2 of
  // them); a misaligned pairing would agree on about a third.
  AugmentOptions warp;
  warp.rand_x_translation[0] = warp.rand_y_translation[0] = -5;
  warp.rand_x_translation[1] = warp.rand_y_translation[1] = 5;
  warp.rand_rotation[0] = -20;
  warp.rand_rotation[1] = 20;
  warp.rand_scale[0] = 0.8;
  warp.rand_scale[1] = 1.2;
  CHECK(run(warp, 0.70) > 0);
}

TEST_CASE("segmentation loader: centercrop and randcrop cut the same window from image and labels",
          "[data][segmentation]") {
  TempDir d;
  for (int i = 0; i < 3; ++i) write_pair(d, "r" + std::to_string(i), 32, 40);
  ImageDatastore ds = ImageDatastore::pixel_pairs(d / "images", d / "labels", seg_options(d));
  for (const char* mode : {"centercrop", "randcrop"}) {
    LoaderOptions o = seg_loader(20, 20);
    REQUIRE(parse_choice(mode, &o.output_size_mode));
    o.training = true;
    o.seed = 5;
    o.batch_size = 3;
    BatchLoader loader(ds, o);
    std::set<int32_t> first_labels;
    for (int epoch = 0; epoch < 4; ++epoch) {
      loader.start_epoch(epoch);
      Batch b;
      REQUIRE(loader.next(b));
      REQUIRE(b.labels.shape() == Shape{3, 20, 20});
      const float* px = b.images.data();
      const int32_t* l = b.labels.data_i32();
      for (int64_t i = 0; i < b.labels.numel(); ++i) {
        INFO(mode << " pixel " << i);
        if (l[i] >= 0) REQUIRE(px[3 * i] == float(40 + 60 * l[i]));
      }
      for (int k = 0; k < 3; ++k) first_labels.insert(l[k * 400] * 1000 + l[k * 400 + 7] * 100 + l[k * 400 + 19]);
    }
    // Centre crops are all alike; random windows differ between draws.
    if (std::string(mode) == "centercrop")
      CHECK(first_labels.size() == 1);
    else
      CHECK(first_labels.size() > 1);
  }
}

TEST_CASE("countEachLabel and median-frequency class weights by hand", "[data][segmentation]") {
  TempDir d;
  // Image a (2x2): classes 0 0 1 undefined. Image b (2x3): 0 2 2 2 2 2.
  Image la(2, 2, 1), lb(2, 3, 1);
  la.pixels = {0, 0, 1, 9};
  lb.pixels = {0, 2, 2, 2, 2, 2};
  test::put_image(d / "images/a.png", Image(2, 2, 3));
  test::put_image(d / "images/b.png", Image(2, 3, 3));
  test::put_image(d / "labels/a.png", la);
  test::put_image(d / "labels/b.png", lb);
  ImageDatastore ds = ImageDatastore::pixel_pairs(d / "images", d / "labels", seg_options(d, 4));
  PixelLabelCounts n = count_each_pixel_label(ds, 2);
  CHECK(n.pixel_count == std::vector<int64_t>{3, 1, 5, 0});
  CHECK(n.image_pixel_count == std::vector<int64_t>{10, 4, 6, 0});
  CHECK(n.undefined == 1);
  CHECK(n.total == 10);
  // imageFreq = 0.3, 0.25, 0.8333; median 0.3; weights 1, 1.2, 0.36; the absent class 0.
  std::vector<std::string> absent;
  auto w = median_frequency_weights(n, &absent, ds.classes());
  REQUIRE(w.size() == 4);
  CHECK(w[0] == Approx(1.0));
  CHECK(w[1] == Approx(1.2));
  CHECK(w[2] == Approx(0.36));
  CHECK(w[3] == 0.0);
  CHECK(absent == std::vector<std::string>{"c3"});
}
