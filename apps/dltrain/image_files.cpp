// Listing image files for classify and segment.
#include "image_files.h"

#include <algorithm>

#include "data/decode.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt::app {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& p) {
  std::string ext = to_lower(p.extension().string());
  for (const auto& e : supported_image_extensions())
    if (ext == e) return true;
  return false;
}

std::vector<std::string> list_images(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
        if (it->is_regular_file() && is_image_file(it->path())) found.push_back(it->path().string());
      if (found.empty())
        throw DataError(p + ": no images found (looked for " + join(supported_image_extensions(), " ") + ")");
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else {
      throw DataError(p + ": no such file or folder");
    }
  }
  return out;
}

}  // namespace dlt::app
