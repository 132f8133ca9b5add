// Image files named on the command line (files or folders searched recursively), shared by
// classify and segment.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace dlt::app {

// True when the extension is one stb_image reads (data/decode.h).
bool is_image_file(const std::filesystem::path& p);
// The image files under the paths: a folder's images sorted, files as given. Throws
// DataError for a missing path or a folder without images.
std::vector<std::string> list_images(const std::vector<std::string>& paths);

}  // namespace dlt::app
