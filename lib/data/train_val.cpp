// load_train_val: builds the datastores the data: section names and splits off validation.
#include "data/train_val.h"

#include "util/error.h"
#include "util/strings.h"

namespace dlt {

std::string geometric_augmentation(const DataOptions& d) {
  const AugmentOptions& a = d.augment;
  const std::string aug = "data.Augmentation.";
  if (a.rand_x_reflection) return aug + "RandXReflection";
  if (a.rand_y_reflection) return aug + "RandYReflection";
  if (a.rand_rotation[0] != 0 || a.rand_rotation[1] != 0) return aug + "RandRotation";
  if (a.rand_scale[0] != 1 || a.rand_scale[1] != 1) return aug + "RandScale";
  if (a.rand_x_scale[0] != 1 || a.rand_x_scale[1] != 1) return aug + "RandXScale";
  if (a.rand_y_scale[0] != 1 || a.rand_y_scale[1] != 1) return aug + "RandYScale";
  if (a.rand_x_shear[0] != 0 || a.rand_x_shear[1] != 0) return aug + "RandXShear";
  if (a.rand_y_shear[0] != 0 || a.rand_y_shear[1] != 0) return aug + "RandYShear";
  if (a.rand_x_translation[0] != 0 || a.rand_x_translation[1] != 0) return aug + "RandXTranslation";
  if (a.rand_y_translation[0] != 0 || a.rand_y_translation[1] != 0) return aug + "RandYTranslation";
  if (a.pad_crop != 0) return aug + "PadCrop";
  if (d.output_size_mode == OutputSizeMode::kRandCrop) return "data.OutputSizeMode: randcrop";
  return "";
}

namespace {

TrainValData load_tables(const DataOptions& d, uint64_t seed) {
  TrainValData out;
  out.train = ImageDatastore::from_table(d.train, d);
  const bool regression = out.train.target_kind() == TargetKind::kResponses;
  if (regression && !d.augment_regression) {
    const std::string option = geometric_augmentation(d);
    if (!option.empty())
      throw ConfigError(option + " moves the images of the regression table " + d.train + " but not its responses (" +
                        join(out.train.response_names(), ", ") +
                        "), so an augmented image would be trained with another image's answer: remove it, or set "
                        "data.AugmentRegression: true when the responses do not depend on the geometry");
  }
  if (!d.validation.empty()) {
    out.validation = ImageDatastore::from_table(d.validation, d, regression ? nullptr : &out.train.classes());
    const auto kind_name = [](const ImageDatastore& ds) {
      return ds.target_kind() == TargetKind::kResponses ? "responses (" + join(ds.response_names(), ",") + ")"
                                                        : std::string("a Labels column");
    };
    if (out.validation.target_kind() != out.train.target_kind() ||
        out.validation.response_names() != out.train.response_names())
      throw DataError(d.validation + ": the validation table has " + kind_name(out.validation) +
                      " but the training table " + d.train + " has " + kind_name(out.train) +
                      " (give both tables the same columns)");
    out.has_validation = true;
  } else if (d.validation_split > 0) {
    auto parts = out.train.split_each_label(1.0 - d.validation_split, seed);
    out.train = std::move(parts.first);
    out.validation = std::move(parts.second);
    out.has_validation = !out.validation.empty();
  }
  return out;
}

}  // namespace

TrainValData load_train_val(const DataOptions& d, uint64_t seed) {
  if (d.train.empty())
    throw ConfigError("data.train is not set (a folder of class folders, a .csv table, or {images, labels})");
  if (d.table()) return load_tables(d, seed);
  const bool pixels = d.segmentation();
  ImageDatastore all = pixels ? ImageDatastore::pixel_pairs(d.train, d.train_labels, d) : ImageDatastore(d.train, d);
  TrainValData out;
  if (!d.validation.empty()) {
    out.train = all;
    out.validation = pixels ? ImageDatastore::pixel_pairs(d.validation, d.validation_labels, d)
                            : ImageDatastore(d.validation, d, all.classes());
    out.has_validation = true;
  } else if (d.validation_split > 0) {
    auto parts = all.split_each_label(1.0 - d.validation_split, seed);
    out.train = parts.first;
    out.validation = parts.second;
    out.has_validation = !out.validation.empty();
  } else {
    out.train = all;
  }
  return out;
}

}  // namespace dlt
