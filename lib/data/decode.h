// Decoding image files (PNG, JPEG, BMP, TGA, GIF, PNM) into 8-bit HWC Images with 1 or 3
// channels. libjpeg-turbo decodes JPEG (faster than stb_image, docs/performance.md, and it checks
// its Huffman tables, which Debian 12's stb_image does not); stb_image decodes the rest.
// Failures throw DataError naming the file and reason.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"

namespace dlt {

// The most pixels an image may have: 2^26 (67 M, e.g. 8192 x 8192; 256 MiB as RGBA). A file
// whose header claims more is refused before anything is allocated: a 100-byte GIF or JPEG
// can claim 65535 x 65535 pixels (16 GiB once decoded).
inline constexpr int64_t kMaxImagePixels = int64_t(1) << 26;

// Every extension stb_image reads (lower case, with the dot).
const std::vector<std::string>& supported_image_extensions();

// The fix a decode error ends with: " (remove or replace the file, or set OnBadImage: skip)".
extern const char* const kBadImageAdvice;

// Decodes `path` into `out` (its buffer is reused) with `channels` = 1 or 3: grey is
// replicated to RGB, RGB becomes grey by MATLAB rgb2gray weights (0.2989, 0.5870, 0.1140),
// alpha is dropped. Throws DataError for missing, unreadable, empty, corrupt or non-image files,
// and for images over kMaxImagePixels.
void decode_image(const std::string& path, int channels, Image& out);
Image decode_image(const std::string& path, int channels);
// Decodes with the channels the file stores: 1 for grey (and grey + alpha), 3 for RGB (and
// RGBA, palette images as their colours); no conversion, so label values stay exact (a JPEG is
// lossy anyway: its grey or RGB as libjpeg-turbo decodes it). Throws DataError like decode_image.
void decode_image_as_stored(const std::string& path, Image& out);
// Same from bytes already in memory; `name` is used in error messages.
void decode_image_memory(const std::vector<uint8_t>& bytes, const std::string& name, int channels, Image& out);

// Width and height from the file header without decoding; throws DataError like decode.
void image_size(const std::string& path, int& height, int& width);
// The same and the channels the file stores as decode_image_as_stored gives them (1 for grey
// and grey + alpha, 3 for RGB, RGBA and palette images).
void image_header(const std::string& path, int& height, int& width, int& channels);

// rgb2gray on one pixel, rounded like MATLAB's uint8 output.
inline uint8_t rgb_to_grey(uint8_t r, uint8_t g, uint8_t b) {
  float v = 0.2989f * r + 0.5870f * g + 0.1140f * b;
  return static_cast<uint8_t>(v + 0.5f > 255.f ? 255.f : v + 0.5f);
}

}  // namespace dlt
