// input_fit_note (input_fit.h): the sampled images' size against InputSize, in one line.
#include "data/input_fit.h"

#include <algorithm>
#include <array>
#include <vector>

#include "data/decode.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt {

namespace {

std::string size_text(const std::array<int, 3>& s) {
  return std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]);
}

}  // namespace

std::string input_fit_note(const ImageDatastore& ds, const Shape& input, OutputSizeMode mode, bool training,
                           const std::string& what) {
  const int h = int(input[0]), w = int(input[1]), c = int(input[2]);
  const int64_t n = ds.size();
  std::vector<std::array<int, 3>> sizes;  // distinct (height, width, channels), in sample order
  bool other_size = false, other_channels = false;
  for (int64_t i = 0, k = 0; i < n && k < 16; i += std::max<int64_t>(1, n / 16), ++k) {
    std::array<int, 3> s{};
    try {
      image_header(ds.path(i), s[0], s[1], s[2]);
    } catch (const DataError&) {
      continue;  // a bad image: the loader reports it (or skips it under OnBadImage: skip)
    }
    other_size |= s[0] != h || s[1] != w;
    other_channels |= s[2] != c;
    if (std::find(sizes.begin(), sizes.end(), s) == sizes.end()) sizes.push_back(s);
  }
  if (!other_size && !other_channels) return "";
  std::vector<std::string> done, why;
  if (other_size) {
    const bool crop = mode != OutputSizeMode::kResize;
    done.push_back(!crop                                           ? "resized"
                   : mode == OutputSizeMode::kRandCrop && training ? "cropped at random positions"
                                                                   : "centre-cropped");
    std::string controls = "data.OutputSizeMode: " + to_string(mode);
    if (sizes.size() == 1)
      controls += "; InputSize [" + std::to_string(sizes[0][0]) + " " + std::to_string(sizes[0][1]) + " " +
                  std::to_string(c) + "] keeps the images' size";
    why.push_back(controls);
  }
  if (other_channels) {
    done.push_back(c == 1 ? "turned grey (rgb2gray)" : "grey replicated to 3 channels");
    why.push_back("InputSize's third value sets the channels");
  }
  std::vector<std::string> shown;
  for (size_t i = 0; i < sizes.size() && i < 3; ++i) shown.push_back(size_text(sizes[i]));
  const std::string images = sizes.size() == 1
                                 ? "are " + shown[0]
                                 : "have several sizes (" + join(shown, ", ") + (sizes.size() > 3 ? ", ..." : "") + ")";
  return what + " images " + images + ", InputSize is " + size_text({h, w, c}) + ": " + join(done, " and ") + " (" +
         join(why, "; ") + ")";
}

}  // namespace dlt
