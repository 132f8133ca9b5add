// The network's output for each of a list of image files, in batches: the inference loop of
// `dltrain classify` and `dltrain predict` (images read and fitted to the input size as
// training's validation reads them, never augmented).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "net/network.h"

namespace dlt::app {

// Runs `net` on the files, `batch` images per forward pass, and calls each(i, row, width) with
// file i's output on the host: `width` floats (the output's values per image, e.g. K class
// probabilities or R responses), valid during the call, in the files' order. DataError names an
// image that cannot be read.
void for_each_output(Network& net, const std::vector<std::string>& files, int64_t batch,
                     const std::function<void(size_t i, const float* row, int64_t width)>& each);

}  // namespace dlt::app
