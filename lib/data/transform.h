// Image transforms of augmentedImageDatastore / imageDataAugmenter: resize (antialiased
// bilinear), center and random crops, and the augmentation (reflections, rotation, scale, shear
// and translation as one affine warp with bilinear sampling and FillValue's fill; PadCrop). Each random
// transform takes an Rng& so callers derive it from (seed, epoch, image index).
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "config/options.h"
#include "data/image.h"
#include "util/rng.h"

namespace dlt {

// Bilinear resize to (height, width); when shrinking, the triangle filter is widened by the
// scale factor (like PIL and MATLAB imresize with antialiasing) so small outputs do not alias.
void resize_bilinear(const Image& in, int height, int width, Image& out);

// Crops the (height, width) window whose top-left corner is (top, left); must fit.
void crop(const Image& in, int top, int left, int height, int width, Image& out);
// Centered and uniformly random windows. Throw DataError naming `name` and both sizes when
// the image is smaller than the window.
void center_crop(const Image& in, int height, int width, const std::string& name, Image& out);
void random_crop(const Image& in, int height, int width, const std::string& name, Rng& rng, Image& out);

// The affine part of the augmentation, drawn from rng: out(p') = in(A^-1 (p' - c - t) + c)
// about the image centre c, A = Shear Scale Rotation Reflection (the reflection applied first):
// Scale diag(scale scale_x, scale scale_y), Shear the vertical shear (y' = y + tan(shear_y) x)
// after the horizontal one (x' = x + tan(shear_x) y). Draws the same number of values from rng
// for the same options (the axis scales and shears only when any is set).
struct AffineDraw {
  bool flip_x = false, flip_y = false;
  double rotation_deg = 0, scale = 1, tx = 0, ty = 0;
  double scale_x = 1, scale_y = 1, shear_x_deg = 0, shear_y_deg = 0;
  bool identity() const {
    return !flip_x && !flip_y && rotation_deg == 0 && scale == 1 && tx == 0 && ty == 0 && scale_x == 1 &&
           scale_y == 1 && shear_x_deg == 0 && shear_y_deg == 0;
  }
};
AffineDraw draw_affine(const AugmentOptions& options, Rng& rng);
// A pixel value per channel (up to 4) for what comes in from outside the image.
using PixelFill = std::array<uint8_t, 4>;
// FillValue as a PixelFill for images of `channels`: one value for all, or one each.
PixelFill pixel_fill(const AugmentOptions& options, int channels);
// Applies a drawn affine warp (same size). Points outside the image are `fill`; bilinear samples
// at the border weigh them in. Pure reflections and integer translations are exact pixel moves.
void warp_affine(const Image& in, const AffineDraw& draw, Image& out, const PixelFill& fill = {});
// The same warp sampling the nearest pixel (label images: classes are never blended); output
// pixels whose source falls outside the image get `fill`.
void warp_affine_nearest(const Image& in, const AffineDraw& draw, uint8_t fill, Image& out);
// Pad by `pad` on every side with `fill` (as warp_affine's), then crop back to the original size
// at a random offset.
void pad_crop(const Image& in, int64_t pad, Rng& rng, Image& out, const PixelFill& fill = {});

// The whole imageDataAugmenter: affine warp, then PadCrop, both filling with FillValue.
// `scratch` is reused; the result is left in `image`.
void augment(Image& image, const AugmentOptions& options, Rng& rng, Image& scratch);

// Segmentation: the same random augmentation applied to an image and its label image (one draw
// from rng, the same one augment() makes): the image sampled bilinearly with FillValue, the
// labels nearest with `fill` (undefined) where the warp or PadCrop brings in outside pixels.
void augment_pair(Image& image, Image& labels, const AugmentOptions& options, uint8_t fill, Rng& rng, Image& scratch);

}  // namespace dlt
