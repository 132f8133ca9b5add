// Converters from the official binary dataset formats to class folders of PNG files
// (DEST/train/<class>/NNNNN.png, DEST/test/<class>/NNNNN.png), so that no Python is needed.
// Used by datasets/get-cifar10.sh and datasets/get-mnist.sh through hidden make-dataset modes,
// and (read_idx_images) by make-dataset rotated-digits.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlt {

// CIFAR-10 binary version: `src` is the folder with data_batch_1..5.bin and test_batch.bin
// (and batches.meta.txt with the class names). Returns the number of images written.
int64_t convert_cifar10_binary(const std::string& src, const std::string& dest);
// MNIST IDX: `src` holds the four uncompressed files train-images-idx3-ubyte,
// train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte.
int64_t convert_mnist_idx(const std::string& src, const std::string& dest);

// An MNIST IDX image file (magic 0x803): `count` images of rows x cols bytes, row-major.
struct IdxImages {
  int64_t count = 0;
  int rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // (count, rows, cols)
};
// Reads `path`, or `path`.gz when only that exists (one gzip member, inflated with
// stb_image's zlib decoder). Throws DataError naming the file when neither exists, when the
// gzip data is corrupt, and when it is not a whole IDX image file.
IdxImages read_idx_images(const std::string& path);

}  // namespace dlt
