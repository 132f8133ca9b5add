// CIFAR-10 records: 1 label byte + 3072 bytes (R, G, B planes of 32x32). MNIST IDX: big-endian
// header (magic 0x803 images / 0x801 labels, counts, rows, cols) then bytes.
#include "data/binary_datasets.h"

#include <algorithm>
#include <cstdio>
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

}  // namespace

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
