// The run's training and validation datastores from the data: section: class folders,
// pixel-label pairs or CSV tables, with data.validation or a ValidationSplit. Also the checks
// that need the data itself: a validation table of another kind than the training table, and
// geometric augmentation of regression responses.
#pragma once
#include <cstdint>
#include <string>

#include "config/options.h"
#include "data/datastore.h"

namespace dlt {

// The run's training and validation datastores: data.validation when given, else a
// ValidationSplit of data.train (splitEachLabel, from training.Seed; tables: rows at random),
// else no validation. Classification (class folders), segmentation (pixel-label pairs) and
// tables (regression, multi-label) alike. Throws ConfigError when data.train is not set, when
// a regression table is augmented geometrically without data.AugmentRegression (naming the
// option), and DataError when the validation table's kind or response names differ from the
// training table's; the datastores' own errors otherwise.
struct TrainValData {
  ImageDatastore train, validation;
  bool has_validation = false;
};
TrainValData load_train_val(const DataOptions& data, uint64_t seed);

// The first geometric augmentation the options ask for (reflection, rotation, scale,
// translation, PadCrop, OutputSizeMode randcrop) as "data.Augmentation.RandRotation" or
// "data.OutputSizeMode: randcrop"; "" when none.
std::string geometric_augmentation(const DataOptions& data);

}  // namespace dlt
