// rotated-digits: IDX images (binary_datasets.h) -> rotate_image (transform.h's affine warp) ->
// PNG files and the File,Angle tables.
#include "data/rotated_digits.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "data/binary_datasets.h"
#include "data/encode.h"
#include "data/transform.h"
#include "util/error.h"
#include "util/files.h"
#include "util/rng.h"

namespace dlt {

Image rotate_image(const Image& image, double degrees) {
  AffineDraw d;
  d.rotation_deg = -degrees;  // the warp's positive angle turns the picture clockwise as displayed
  Image out;
  warp_affine(image, d, out);
  return out;
}

int64_t write_rotated_digits(const std::string& dir, const RotatedDigitsOptions& o) {
  namespace fs = std::filesystem;
  if (o.count < 1) throw UsageError("--count must be at least 1");
  if (!(o.max_angle >= 0 && o.max_angle <= 180)) throw UsageError("the angle range must be within [-180, 180]");
  const struct {
    const char* part;
    const char* file;
  } parts[] = {{"train", "train-images-idx3-ubyte"}, {"test", "t10k-images-idx3-ubyte"}};
  IdxImages sources[2];  // both read and checked before anything is written
  for (int p = 0; p < 2; ++p) {
    sources[p] = read_idx_images((fs::path(o.from) / parts[p].file).string());
    if (sources[p].count < o.count)
      throw UsageError("--count " + std::to_string(o.count) + ": " + (fs::path(o.from) / parts[p].file).string() +
                       " has only " + std::to_string(sources[p].count) + " images");
  }
  int64_t written = 0;
  for (uint64_t p = 0; p < 2; ++p) {
    const IdxImages& src = sources[p];
    const fs::path folder = fs::path(dir) / parts[p].part;
    make_dirs(folder.string());
    std::string csv = "File,Angle\n";
    Image digit(src.rows, src.cols, 1);
    const size_t px = size_t(src.rows) * src.cols;
    for (int i = 0; i < o.count; ++i) {
      Rng rng = Rng::derive(o.seed, {kRotatedDigitsStream, p, uint64_t(i)});
      char angle[32], file[32];
      std::snprintf(angle, sizeof angle, "%.3f", rng.uniform(-o.max_angle, o.max_angle));
      std::snprintf(file, sizeof file, "%05d.png", i);
      std::copy_n(src.pixels.begin() + static_cast<std::ptrdiff_t>(px * size_t(i)), px, digit.pixels.begin());
      write_image((folder / file).string(), rotate_image(digit, std::strtod(angle, nullptr)));
      csv += std::string(parts[p].part) + "/" + file + "," + (std::string(angle) == "-0.000" ? "0.000" : angle) + "\n";
      ++written;
    }
    write_file_atomic((fs::path(dir) / (std::string(parts[p].part) + ".csv")).string(), csv);
  }
  return written;
}

}  // namespace dlt
