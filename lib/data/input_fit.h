// How a datastore's images are fitted to the network's InputSize (resized, cropped, turned grey
// or replicated to RGB), said once per datastore before training: judged from the headers of up
// to 16 images spread evenly over the datastore, so nothing is decoded here.
#pragma once
#include <string>

#include "config/options.h"
#include "data/datastore.h"
#include "tensor/shape.h"

namespace dlt {

// One line naming `what` ("training"), the sampled images' size, InputSize (input: H, W, C),
// what is done to fit them and the option that decides it, e.g. "training images are 16x16x3,
// InputSize is 32x32x3: resized (data.OutputSizeMode: resize; InputSize [16 16 3] keeps the
// images' size)"; "" when every sampled image has InputSize's size and channels (or none can be
// read: the loader reports those). `training`: randcrop crops at random (validation centre-crops).
std::string input_fit_note(const ImageDatastore& ds, const Shape& input, OutputSizeMode mode, bool training,
                           const std::string& what);

}  // namespace dlt
