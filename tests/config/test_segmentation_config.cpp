// The segmentation data: form: train/validation as {images, labels}, ClassNames and LabelIDs
// (integers, RGB triplets, several values per class), --set into the pairs, the resolved
// config's round trip, and each mistake as one line at its file:line.
#include <catch2/catch.hpp>

#include "config_test_util.h"
#include "util/error.h"

using namespace dlt;
using Catch::Matchers::Contains;

namespace {

// kNet is 7 lines, so "data:" is line 8 and its first key line 9.
std::string seg(const std::string& data) { return test::kNet + "data:\n" + data; }

std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    load_config_text(text, "s.yaml", sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("segmentation data form: pairs, ClassNames, LabelIDs of each kind", "[config][segmentation]") {
  Config c = load_config_text(seg("  train: {images: im/train, labels: lb/train}\n"
                                  "  validation: {images: im/val, labels: lb/val}\n"
                                  "  ClassNames: [sky, road, car]\n"
                                  "  LabelIDs: [0, [1, 7], [[200], [201]]]\n"),
                              "s.yaml");
  CHECK(c.data.segmentation());
  CHECK(c.data.train == "im/train");
  CHECK(c.data.train_labels == "lb/train");
  CHECK(c.data.validation == "im/val");
  CHECK(c.data.validation_labels == "lb/val");
  CHECK(c.data.class_names == std::vector<std::string>{"sky", "road", "car"});
  using Ids = std::vector<std::vector<std::vector<int64_t>>>;
  CHECK(c.data.label_ids == Ids{{{0}}, {{1}, {7}}, {{200}, {201}}});

  // RGB triplets (camvidPixelLabelIDs): a flat list of three is one colour.
  Config rgb = load_config_text(seg("  train: {images: a, labels: b}\n"
                                    "  ClassNames: [Sky, Car]\n"
                                    "  LabelIDs: [[128, 128, 128], [[64, 0, 128], [192, 128, 192]]]\n"),
                                "s.yaml");
  CHECK(rgb.data.label_ids == Ids{{{128, 128, 128}}, {{64, 0, 128}, {192, 128, 192}}});

  // LabelIDs left out: index labels 0..K-1, written out in the resolved config.
  Config plain = load_config_text(seg("  train: {images: a, labels: b}\n  ClassNames: [x, y]\n"), "s.yaml");
  CHECK(plain.data.label_ids == Ids{{{0}}, {{1}}});

  // The resolved config loads back to the same data options.
  for (const Config* k : {&c, &rgb, &plain}) {
    Config back = load_config_text(dump_config(*k), "resolved.yaml");
    CHECK(back.data.train == k->data.train);
    CHECK(back.data.train_labels == k->data.train_labels);
    CHECK(back.data.validation_labels == k->data.validation_labels);
    CHECK(back.data.class_names == k->data.class_names);
    CHECK(back.data.label_ids == k->data.label_ids);
  }
  // Classification configs are unchanged: a folder, no labels.
  Config cls = load_config_text(test::kNet + "data:\n  train: /data/x\n", "s.yaml");
  CHECK_FALSE(cls.data.segmentation());
  CHECK(load_config_text(dump_config(cls), "r.yaml").data.train == "/data/x");
}

TEST_CASE("segmentation data form: --set reaches images and labels", "[config][segmentation]") {
  const std::string text = seg("  train: {images: a, labels: b}\n  ClassNames: [x, y]\n");
  Config c = load_config_text(text, "s.yaml", {"data.train.labels=/x", "data.train.images=/y"});
  CHECK(c.data.train_labels == "/x");
  CHECK(c.data.train == "/y");
  Config v = load_config_text(text, "s.yaml", {"data.validation={images: /vi, labels: /vl}"});
  CHECK(v.data.validation_labels == "/vl");
  CHECK_THAT(error_of(text, {"data.train.label=/x"}), Contains("no sub-key 'label'"));
  CHECK_THAT(error_of(test::kNet + "data:\n  train: /folder\n", {"data.train.labels=/x"}),
             Contains("is a folder, not {images, labels}"));
}

TEST_CASE("segmentation data form: mistakes are one line at their place", "[config][segmentation]") {
  CHECK_THAT(error_of(seg("  train: {images: a, lables: b}\n  ClassNames: [x, y]\n")),
             Contains("s.yaml:9") && Contains("'lables'") && Contains("did you mean 'labels'"));
  CHECK_THAT(error_of(seg("  train: {images: a}\n  ClassNames: [x, y]\n")),
             Contains("s.yaml:9") && Contains("needs both images and labels"));
  CHECK_THAT(error_of(seg("  train: {images: a, labels: b}\n")), Contains("needs ClassNames"));
  CHECK_THAT(error_of(seg("  train: {images: a, labels: b}\n  ClassNames: [x, y, z]\n  LabelIDs: [0, 1]\n")),
             Contains("s.yaml:11") && Contains("3 classes but LabelIDs has 2"));
  CHECK_THAT(error_of(seg("  train: {images: a, labels: b}\n  ClassNames: [x, y]\n  LabelIDs: [0, 300]\n")),
             Contains("s.yaml:11") && Contains("outside 0..255"));
  CHECK_THAT(error_of(seg("  train: {images: a, labels: b}\n  ClassNames: [x, y]\n  LabelIDs: [3, 3]\n")),
             Contains("given to both class 'x' and class 'y'"));
  CHECK_THAT(error_of(seg("  train: {images: a, labels: b}\n  ClassNames: [x, y]\n  LabelIDs: [1, [1, 2, 3]]\n")),
             Contains("mixes integers and RGB triplets"));
  CHECK_THAT(error_of(seg("  train: /folder\n  ClassNames: [x, y]\n")),
             Contains("s.yaml:10") && Contains("for pixel-label data"));
  CHECK_THAT(error_of(seg("  train: {images: a, labels: b}\n  validation: /v\n  ClassNames: [x, y]\n")),
             Contains("s.yaml:10") && Contains("data.validation must be {images: DIR, labels: DIR}"));
}
