// input_fit_note: the one line a training run logs per datastore whose images do not have
// InputSize's size or channels (read from the file headers), and none when they all fit.
#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <vector>

#include "data/datastore.h"
#include "data/input_fit.h"
#include "data_test_util.h"

namespace dlt {
namespace {

// A datastore of one image per (h, w, c) in `sizes`, files of extension `ext`, all of class a.
ImageDatastore store(const test::TempDir& dir, const std::string& name, std::vector<std::array<int, 3>> sizes,
                     const std::string& ext = ".png") {
  std::vector<std::string> paths;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string p = dir / (name + "/a/" + std::to_string(i) + ext);
    test::put_image(p, test::pattern_image(sizes[i][0], sizes[i][1], sizes[i][2], int(i)));
    paths.push_back(p);
  }
  return ImageDatastore::from_lists(paths, std::vector<int32_t>(paths.size(), 0), {"a"});
}

TEST_CASE("input fit: one line per datastore saying what is done and which option decides", "[data]") {
  test::TempDir dir;
  const ImageDatastore rgb16 = store(dir, "rgb16", {{16, 16, 3}, {16, 16, 3}, {16, 16, 3}});
  // Fits: no line, in any mode.
  for (OutputSizeMode m : {OutputSizeMode::kResize, OutputSizeMode::kCenterCrop, OutputSizeMode::kRandCrop})
    CHECK(input_fit_note(rgb16, Shape{16, 16, 3}, m, true, "training").empty());
  CHECK(input_fit_note(rgb16, Shape{32, 32, 3}, OutputSizeMode::kResize, true, "training") ==
        "training images are 16x16x3, InputSize is 32x32x3: resized (data.OutputSizeMode: resize; InputSize [16 16 3] "
        "keeps the images' size)");
  CHECK(input_fit_note(rgb16, Shape{16, 16, 1}, OutputSizeMode::kResize, true, "training") ==
        "training images are 16x16x3, InputSize is 16x16x1: turned grey (rgb2gray) (InputSize's third value sets the "
        "channels)");
  CHECK(input_fit_note(rgb16, Shape{8, 8, 1}, OutputSizeMode::kCenterCrop, false, "validation") ==
        "validation images are 16x16x3, InputSize is 8x8x1: centre-cropped and turned grey (rgb2gray) "
        "(data.OutputSizeMode: centercrop; InputSize [16 16 1] keeps the images' size; InputSize's third value sets "
        "the channels)");
  // randcrop crops training images at random, validation images in the centre.
  CHECK(input_fit_note(rgb16, Shape{12, 12, 3}, OutputSizeMode::kRandCrop, true, "training") ==
        "training images are 16x16x3, InputSize is 12x12x3: cropped at random positions (data.OutputSizeMode: "
        "randcrop; InputSize [16 16 3] keeps the images' size)");
  CHECK(input_fit_note(rgb16, Shape{12, 12, 3}, OutputSizeMode::kRandCrop, false, "validation")
            .find(": centre-cropped (data.OutputSizeMode: randcrop;") != std::string::npos);
  // Grey files (PNG and JPEG) for a 3-channel InputSize.
  const ImageDatastore grey = store(dir, "grey", {{10, 12, 1}, {10, 12, 1}});
  CHECK(input_fit_note(grey, Shape{10, 12, 3}, OutputSizeMode::kResize, true, "training") ==
        "training images are 10x12x1, InputSize is 10x12x3: grey replicated to 3 channels (InputSize's third value "
        "sets the channels)");
  // A JPEG's channels come from its header (libjpeg-turbo), a PNG's from stb_image's.
  const ImageDatastore jpeg = store(dir, "jpeg", {{10, 12, 3}}, ".jpg");
  CHECK(input_fit_note(jpeg, Shape{10, 12, 3}, OutputSizeMode::kResize, true, "training").empty());
  CHECK(input_fit_note(jpeg, Shape{10, 12, 1}, OutputSizeMode::kResize, true, "training") ==
        "training images are 10x12x3, InputSize is 10x12x1: turned grey (rgb2gray) (InputSize's third value sets the "
        "channels)");
  // Several sizes: up to three listed, no single InputSize suggested.
  const ImageDatastore mixed = store(dir, "mixed", {{16, 16, 3}, {20, 24, 3}, {16, 16, 3}, {30, 10, 3}, {9, 9, 3}});
  CHECK(input_fit_note(mixed, Shape{16, 16, 3}, OutputSizeMode::kResize, true, "training") ==
        "training images have several sizes (16x16x3, 20x24x3, 30x10x3, ...), InputSize is 16x16x3: resized "
        "(data.OutputSizeMode: resize)");
}

}  // namespace
}  // namespace dlt
