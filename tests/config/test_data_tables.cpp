// The data: section with CSV tables: train/validation ending in .csv, ClassNames for
// multi-label tables, AugmentRegression and its round trip, and the mixes that are refused
// at their file:line.
#include <catch2/catch.hpp>

#include "config_test_util.h"
#include "util/error.h"

using namespace dlt;
using Catch::Matchers::Contains;

namespace {

// kNet is 7 lines, so "data:" is line 8 and its first key line 9.
std::string with_data(const std::string& data) { return test::kNet + "data:\n" + data; }

std::string error_of(const std::string& text) {
  try {
    load_config_text(text, "t.yaml", {});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("data tables: .csv paths, ClassNames, AugmentRegression", "[config][table]") {
  Config c = load_config_text(with_data("  train: data/digits/train.CSV\n"
                                        "  validation: data/digits/test.csv\n"
                                        "  AugmentRegression: true\n"
                                        "  Augmentation: {RandRotation: [-5, 5]}\n"),
                              "t.yaml");
  CHECK(c.data.table());
  CHECK_FALSE(c.data.segmentation());
  CHECK(c.data.train == "data/digits/train.CSV");
  CHECK(c.data.augment_regression);
  Config back = load_config_text(dump_config(c), "resolved.yaml");
  CHECK(back.data.augment_regression);
  CHECK(back.data.validation == "data/digits/test.csv");
  CHECK_FALSE(load_config_text(with_data("  train: a/b\n"), "t.yaml").data.augment_regression);  // default

  Config multi = load_config_text(with_data("  train: m.csv\n  ClassNames: [cat, dog]\n"), "t.yaml");
  CHECK(multi.data.class_names == std::vector<std::string>{"cat", "dog"});
  Config set =
      load_config_text(with_data("  train: a/b\n"), "t.yaml", {"data.train=x.csv", "data.AugmentRegression=1"});
  CHECK(set.data.table());
  CHECK(set.data.augment_regression);

  CHECK_THAT(error_of(with_data("  train: a.csv\n  validation: folder/val\n")),
             Contains("t.yaml:10") && Contains("data.train is a .csv table, so data.validation must be one too"));
  CHECK_THAT(error_of(with_data("  train: folder/train\n  validation: v.csv\n")),
             Contains("t.yaml:10") && Contains("data.validation is a .csv table but data.train is a folder"));
  CHECK_THAT(error_of(with_data("  train: a.csv\n  ClassNames: [x]\n  LabelIDs: [1]\n")),
             Contains("t.yaml:11") && Contains("a multi-label table takes ClassNames only"));
  CHECK_THAT(error_of(with_data("  train: a/b\n  AugmentRegression: maybe\n")),
             Contains("t.yaml:10") && Contains("AugmentRegression"));
  CHECK_THAT(error_of(with_data("  train: a/b\n  ClassNames: [x, y]\n")), Contains("multi-label tables"));
}
