// Segmentation data for training: seed 003's class weights: countEachLabel over the training
// label images and ClassWeights: median-frequency resolved to median(imageFreq) ./ imageFreq.
// (The run's datastores, load_train_val, are data/train_val.h's.)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/datastore.h"
#include "data/train_val.h"  // load_train_val

namespace dlt {

// MATLAB's countEachLabel on a pixelLabelDatastore: per class the labelled pixels of that class
// (PixelCount) and the pixels of the images in which it occurs (ImagePixelCount). Label images
// are decoded at their own size on `threads` threads (0: every core). Throws DataError naming
// both files when a label image's size differs from its image's.
struct PixelLabelCounts {
  std::vector<int64_t> pixel_count, image_pixel_count;
  int64_t undefined = 0, total = 0;  // pixels whose value is in no class; all pixels
};
PixelLabelCounts count_each_pixel_label(const ImageDatastore& ds, int threads = 0);

// imageFreq = PixelCount ./ ImagePixelCount; weights = median(imageFreq) ./ imageFreq over the
// classes that occur. A class that never occurs gets weight 0 (it has no pixel to weigh) and is
// named in `absent`.
std::vector<double> median_frequency_weights(const PixelLabelCounts& counts, std::vector<std::string>* absent,
                                             const std::vector<std::string>& classes);

// Segmentation training data, before training: counts the training labels (countEachLabel),
// warns when most pixels are undefined (LabelIDs that do not match the label images) or a
// class never occurs, and for every layer with ClassWeights: median-frequency writes the
// numbers into the layer spec (so config.yaml and the model show them) and the log. Does
// nothing for classification data; throws ConfigError when a layer asks for median-frequency
// weights without pixel-label data.
void prepare_pixel_labels(Config& config);

}  // namespace dlt
