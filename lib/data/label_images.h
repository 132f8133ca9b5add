// Images made from per-pixel class maps: the most probable class of each pixel, class colours
// (--colour label images) and labeloverlay's blend of an image with its class colours. Class
// maps are 1-channel Images of class indices (data/pixel_labels.h).
#pragma once
#include <array>
#include <vector>

#include "data/image.h"

namespace dlt {

using Colour = std::array<uint8_t, 3>;

// (height, width, k) probabilities, row-major -> the index of the largest per pixel (the
// lowest index among equals), as a 1-channel Image.
void argmax_classes(const float* probs, int height, int width, int k, Image& out);
// A fixed palette of k distinct colours for models without RGB LabelIDs: MATLAB's `lines`
// colour order for the first seven, then hues a golden angle apart.
std::vector<Colour> distinct_colours(int k);
// Class map -> RGB image of the class colours; a value without a colour (undefined) is black.
Image colourize(const Image& classes, const std::vector<Colour>& colours);
// labeloverlay(image, classes) with its default Transparency 0.5: each pixel is
// round(0.5 * image + 0.5 * colour); undefined pixels keep the image. image is RGB, same size.
Image overlay(const Image& image, const Image& classes, const std::vector<Colour>& colours, double transparency = 0.5);

}  // namespace dlt
