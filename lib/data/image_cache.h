// ImageCache: decoded (resized, pre-augmentation) images by datastore index, so epochs after
// the first skip decoding. In memory, or in a file: "<root>/.dltrain-cache-<key>.bin" when
// the data folder is writable, else in the system temp folder. The file is written under a
// temporary name and renamed into place once every image is in it; a later run with the same
// files, sizes, mtimes and image shape reuses it. Until then it only serves the current run.
// Thread safety: get/put may be called concurrently for different indices.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/image.h"

namespace dlt {

class ImageCache {
 public:
  enum class Kind { kNone, kMemory, kFile };
  // `key` identifies the content (see cache_key); `dir` is where a file cache goes.
  ImageCache(Kind kind, int64_t items, uint64_t key, const std::string& dir);
  ~ImageCache();
  ImageCache(const ImageCache&) = delete;
  ImageCache& operator=(const ImageCache&) = delete;

  Kind kind() const { return kind_; }
  // Copies image `i` into out; false when it is not cached.
  bool get(int64_t i, Image& out) const;
  // Stores image `i` (first writer wins; later puts of the same index are ignored).
  void put(int64_t i, const Image& image);
  int64_t cached() const { return ready_count_.load(); }
  // The file's final path ("" for memory/none); complete() once it was renamed into place.
  const std::string& file_path() const { return final_path_; }
  bool complete() const { return complete_.load(); }

 private:
  struct Entry {
    uint64_t offset = 0;
    int32_t height = 0, width = 0, channels = 0, pad = 0;
  };
  bool load_existing();
  void finalize();

  Kind kind_;
  int64_t items_;
  uint64_t key_;
  std::unique_ptr<std::atomic<uint8_t>[]> state_;  // 0 empty, 1 being written, 2 ready
  std::atomic<int64_t> ready_count_{0};
  std::vector<Image> memory_;
  std::vector<Entry> entries_;
  int fd_ = -1;
  std::atomic<uint64_t> end_{0};
  std::string final_path_, temp_path_;
  std::atomic<bool> complete_{false};
};

// Hash of the image list (paths, sizes, mtimes) and the cached image geometry.
uint64_t cache_key(const std::vector<std::string>& paths, const std::string& geometry);

}  // namespace dlt
