// ImageCache. File layout: header {magic, key, items, index offset} (32 bytes), pixel data,
// then the index (one Entry per item). The header is written last, when the file is complete.
#include "data/image_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "util/error.h"
#include "util/log.h"

namespace dlt {
namespace {

constexpr uint64_t kCacheMagic = 0x314843544c44ULL;  // "DLTCH1"
constexpr uint64_t kHeaderBytes = 32;

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

bool pwrite_all(int fd, const void* data, size_t n, uint64_t off) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
    off += uint64_t(w);
  }
  return true;
}

bool pread_all(int fd, void* data, size_t n, uint64_t off) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= size_t(r);
    off += uint64_t(r);
  }
  return true;
}

}  // namespace

uint64_t cache_key(const std::vector<std::string>& paths, const std::string& geometry) {
  namespace fs = std::filesystem;
  uint64_t h = fnv1a(0xcbf29ce484222325ULL, geometry.data(), geometry.size());
  for (const auto& p : paths) {
    h = fnv1a(h, p.data(), p.size() + 1);
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    const auto mtime = fs::last_write_time(p, ec).time_since_epoch().count();
    h = fnv1a(h, &size, sizeof size);
    h = fnv1a(h, &mtime, sizeof mtime);
  }
  return h;
}

ImageCache::ImageCache(Kind kind, int64_t items, uint64_t key, const std::string& dir)
    : kind_(kind), items_(items), key_(key), state_(new std::atomic<uint8_t>[items]) {
  for (int64_t i = 0; i < items; ++i) state_[i].store(0, std::memory_order_relaxed);
  if (kind_ == Kind::kMemory) memory_.resize(items);
  if (kind_ != Kind::kFile) return;
  entries_.resize(items);
  char name[64];
  std::snprintf(name, sizeof name, ".dltrain-cache-%016llx.bin", static_cast<unsigned long long>(key));
  final_path_ = (std::filesystem::path(dir) / name).string();
  if (load_existing()) return;
  temp_path_ = final_path_ + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(temp_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    log::warn("image cache: cannot create {}: {}; caching is off", temp_path_, std::strerror(errno));
    kind_ = Kind::kNone;
    return;
  }
  end_ = kHeaderBytes;
}

ImageCache::~ImageCache() {
  if (fd_ >= 0) ::close(fd_);
  if (!complete_ && !temp_path_.empty()) std::remove(temp_path_.c_str());
}

bool ImageCache::load_existing() {
  int fd = ::open(final_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uint64_t header[4];
  std::vector<Entry> entries(items_);
  if (!pread_all(fd, header, sizeof header, 0) || header[0] != kCacheMagic || header[1] != key_ ||
      header[2] != uint64_t(items_) || !pread_all(fd, entries.data(), entries.size() * sizeof(Entry), header[3])) {
    ::close(fd);
    return false;
  }
  entries_ = std::move(entries);
  fd_ = fd;
  for (int64_t i = 0; i < items_; ++i) state_[i].store(2, std::memory_order_relaxed);
  ready_count_ = items_;
  complete_ = true;
  return true;
}

bool ImageCache::get(int64_t i, Image& out) const {
  if (kind_ == Kind::kNone || state_[i].load(std::memory_order_acquire) != 2) return false;
  if (kind_ == Kind::kMemory) {
    const Image& m = memory_[i];
    out.height = m.height;
    out.width = m.width;
    out.channels = m.channels;
    out.pixels.assign(m.pixels.begin(), m.pixels.end());
    return true;
  }
  const Entry& e = entries_[i];
  out.height = e.height;
  out.width = e.width;
  out.channels = e.channels;
  out.pixels.resize(size_t(e.height) * e.width * e.channels);
  return pread_all(fd_, out.pixels.data(), out.pixels.size(), e.offset);
}

void ImageCache::put(int64_t i, const Image& image) {
  if (kind_ == Kind::kNone || complete_) return;
  uint8_t expected = 0;
  if (!state_[i].compare_exchange_strong(expected, 1)) return;
  if (kind_ == Kind::kMemory) {
    memory_[i] = image;
  } else {
    const uint64_t off = end_.fetch_add(image.bytes());
    if (!pwrite_all(fd_, image.pixels.data(), image.bytes(), off)) {
      state_[i].store(0);  // not cached; decoded again next time
      return;
    }
    entries_[i] = Entry{off, image.height, image.width, image.channels, 0};
  }
  state_[i].store(2, std::memory_order_release);
  if (ready_count_.fetch_add(1) + 1 == items_ && kind_ == Kind::kFile) finalize();
}

void ImageCache::finalize() {
  const uint64_t index_off = end_.load();
  const uint64_t header[4] = {kCacheMagic, key_, uint64_t(items_), index_off};
  if (!pwrite_all(fd_, entries_.data(), entries_.size() * sizeof(Entry), index_off) ||
      !pwrite_all(fd_, header, sizeof header, 0) || ::fsync(fd_) != 0 ||
      std::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    log::warn("image cache: cannot complete {} ({}); it serves this run only", final_path_, std::strerror(errno));
    return;
  }
  complete_ = true;
}

}  // namespace dlt
