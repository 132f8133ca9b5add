// Helpers for the data tests: a self-deleting temp folder and small synthetic images.
#pragma once
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "data/encode.h"
#include "data/image.h"

namespace dlt::test {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("dlt_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& rel) const { return (path_ / rel).string(); }

 private:
  std::filesystem::path path_;
};

// A (h, w, c) image whose pixel values encode position: v = (seed + 7y + 3x + 50k) % 256.
inline Image pattern_image(int h, int w, int c, int seed = 0) {
  Image img(h, w, c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) img.at(y, x)[k] = uint8_t((seed + 7 * y + 3 * x + 50 * k) % 256);
  return img;
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// Writes an image, creating parent folders.
inline void put_image(const std::string& path, const Image& img) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  write_image(path, img);
}

}  // namespace dlt::test
