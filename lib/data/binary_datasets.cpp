// CIFAR-10 records: 1 label byte + 3072 bytes (R, G, B planes of 32x32). MNIST IDX: big-endian
// header (magic 0x803 images / 0x801 labels, counts, rows, cols) then bytes.
#include "data/binary_datasets.h"

#include <stb/stb_image.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "data/encode.h"
#include "data/image.h"
#include "util/error.h"

namespace dlt {
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw DataError(p.string() + ": cannot open (is the archive unpacked there?)");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::string numbered(int64_t i) {
  char b[32];
  std::snprintf(b, sizeof b, "%05lld.png", static_cast<long long>(i));
  return b;
}

void make_dirs(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (ec) throw DataError(p.string() + ": cannot create folder: " + ec.message());
}

uint32_t be32(const std::vector<uint8_t>& b, size_t off) {
  return uint32_t(b[off]) << 24 | uint32_t(b[off + 1]) << 16 | uint32_t(b[off + 2]) << 8 | uint32_t(b[off + 3]);
}

// One gzip member (RFC 1952): header, raw deflate data (stb_image's inflater), CRC32 and
// size. The size is checked; the CRC is not (stb's inflater rejects most corruption itself).
std::vector<uint8_t> gunzip(const std::vector<uint8_t>& gz, const std::string& name) {
  auto bad = [&](const std::string& why) {
    return DataError(name + ": not a gzip file dltrain can read (" + why + ")");
  };
  if (gz.size() < 18 || gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8) throw bad("bad magic");
  const uint8_t flags = gz[3];
  size_t at = 10;
  if (flags & 4) {  // FEXTRA
    if (at + 2 > gz.size()) throw bad("truncated header");
    at += 2 + (size_t(gz[at]) | size_t(gz[at + 1]) << 8);
  }
  for (uint8_t bit : {uint8_t(8), uint8_t(16)})  // FNAME, FCOMMENT: zero-terminated
    if (flags & bit) {
      while (at < gz.size() && gz[at] != 0) ++at;
      ++at;
    }
  if (flags & 2) at += 2;  // FHCRC
  if (at + 8 > gz.size()) throw bad("truncated header");
  const size_t n = gz.size();
  const uint32_t isize =
      uint32_t(gz[n - 4]) | uint32_t(gz[n - 3]) << 8 | uint32_t(gz[n - 2]) << 16 | uint32_t(gz[n - 1]) << 24;
  if (n - at - 8 > size_t(1) << 30 || isize > uint32_t(1) << 30) throw bad("over 1 GiB");
  int out_len = 0;  // the size field as the first guess: one allocation for a well-formed file
  char* raw = stbi_zlib_decode_malloc_guesssize_headerflag(
      reinterpret_cast<const char*>(gz.data() + at), static_cast<int>(n - at - 8),
      static_cast<int>(std::max<uint32_t>(isize, 1024)), &out_len, 0);
  if (!raw) throw bad("corrupt deflate data");
  std::vector<uint8_t> out(raw, raw + out_len);
  std::free(raw);
  if (isize != uint32_t(out.size()))
    throw bad("its size field says " + std::to_string(isize) + " bytes, inflated " + std::to_string(out.size()) +
              "; several members or truncated?");
  return out;
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  std::error_code ec;
  const bool plain = fs::exists(path, ec), gz = !plain && fs::exists(path + ".gz", ec);
  if (!plain && !gz)
    throw DataError(path + ": no such file (nor " + path + ".gz); give the folder of MNIST's IDX files");
  const std::string name = gz ? path + ".gz" : path;
  std::vector<uint8_t> bytes = read_all(name);
  if (gz) bytes = gunzip(bytes, name);
  if (bytes.size() < 16 || be32(bytes, 0) != 0x803) throw DataError(name + ": not an IDX image file (bad magic)");
  IdxImages out;
  out.count = be32(bytes, 4);
  const uint32_t rows = be32(bytes, 8), cols = be32(bytes, 12);
  out.rows = static_cast<int>(std::min<uint32_t>(rows, 1u << 16));
  out.cols = static_cast<int>(std::min<uint32_t>(cols, 1u << 16));
  const uint64_t need = uint64_t(out.count) * out.rows * out.cols;  // below 2^64: 2^32 x 2^16 x 2^16
  if (rows < 1 || cols < 1 || rows > 4096 || cols > 4096 || bytes.size() - 16 < need)
    throw DataError(name + ": IDX header says " + std::to_string(out.count) + " images of " + std::to_string(out.rows) +
                    "x" + std::to_string(out.cols) + " but the file has " + std::to_string(bytes.size() - 16) +
                    " bytes of pixels (truncated?)");
  out.pixels.assign(bytes.begin() + 16, bytes.begin() + 16 + static_cast<std::ptrdiff_t>(need));
  return out;
}

int64_t convert_cifar10_binary(const std::string& src, const std::string& dest) {
  std::vector<std::string> classes = {"airplane", "automobile", "bird",  "cat",  "deer",
                                      "dog",      "frog",       "horse", "ship", "truck"};
  if (std::ifstream meta(fs::path(src) / "batches.meta.txt"); meta) {
    std::vector<std::string> names;
    for (std::string line; std::getline(meta, line);)
      if (!line.empty() && line.find_first_not_of(" \r\t") != std::string::npos)
        names.push_back(line.substr(0, line.find_last_not_of(" \r\t") + 1));
    if (names.size() == 10) classes = names;
  }
  int64_t written = 0;
  const struct {
    const char* part;
    std::vector<std::string> files;
  } parts[] = {
      {"train", {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"}},
      {"test", {"test_batch.bin"}}};
  for (const auto& part : parts) {
    std::vector<int64_t> per_class(classes.size(), 0);  // a folder appears with its first image
    for (const auto& file : part.files) {
      const fs::path p = fs::path(src) / file;
      const auto bytes = read_all(p);
      constexpr size_t kRecord = 1 + 3072;
      if (bytes.empty() || bytes.size() % kRecord != 0)
        throw DataError(p.string() + ": " + std::to_string(bytes.size()) +
                        " bytes is not a whole number of CIFAR-10 records (3073 bytes each)");
      Image img(32, 32, 3);
      for (size_t r = 0; r < bytes.size() / kRecord; ++r) {
        const uint8_t* rec = &bytes[r * kRecord];
        if (rec[0] >= classes.size())
          throw DataError(p.string() + ": record " + std::to_string(r) + " has label " + std::to_string(rec[0]) +
                          " (expected 0..9)");
        for (int i = 0; i < 1024; ++i)
          for (int k = 0; k < 3; ++k) img.pixels[i * 3 + k] = rec[1 + k * 1024 + i];
        const auto& c = classes[rec[0]];
        if (per_class[rec[0]] == 0) make_dirs(fs::path(dest) / part.part / c);
        write_image((fs::path(dest) / part.part / c / numbered(per_class[rec[0]]++)).string(), img);
        ++written;
      }
    }
  }
  return written;
}

int64_t convert_mnist_idx(const std::string& src, const std::string& dest) {
  int64_t written = 0;
  const struct {
    const char* part;
    const char* images;
    const char* labels;
  } parts[] = {{"train", "train-images-idx3-ubyte", "train-labels-idx1-ubyte"},
               {"test", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}};
  for (const auto& part : parts) {
    const fs::path ip = fs::path(src) / part.images, lp = fs::path(src) / part.labels;
    const auto images = read_all(ip), labels = read_all(lp);
    if (images.size() < 16 || be32(images, 0) != 0x803)
      throw DataError(ip.string() + ": not an IDX image file (bad magic; gunzip it first?)");
    if (labels.size() < 8 || be32(labels, 0) != 0x801)
      throw DataError(lp.string() + ": not an IDX label file (bad magic; gunzip it first?)");
    const uint32_t n = be32(images, 4), rows = be32(images, 8), cols = be32(images, 12);
    if (be32(labels, 4) != n || labels.size() < 8 + size_t(n) || images.size() < 16 + size_t(n) * rows * cols)
      throw DataError(ip.string() + ": image and label counts or sizes do not match (truncated?)");
    std::vector<int64_t> per_class(10, 0);
    Image img(int(rows), int(cols), 1);
    for (uint32_t i = 0; i < n; ++i) {
      const uint8_t label = labels[8 + i];
      if (label > 9) throw DataError(lp.string() + ": label " + std::to_string(label) + " > 9");
      if (per_class[label] == 0) make_dirs(fs::path(dest) / part.part / std::to_string(label));
      std::copy_n(&images[16 + size_t(i) * rows * cols], size_t(rows) * cols, img.pixels.data());
      write_image((fs::path(dest) / part.part / std::to_string(label) / numbered(per_class[label]++)).string(), img);
      ++written;
    }
  }
  return written;
}

}  // namespace dlt
