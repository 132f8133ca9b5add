// TFRecord files, the container of TensorBoard's event files: each record is
//   uint64 length | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// all little-endian, where mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8. The writer only
// appends, one write(2) per record, so a reader sees whole records while the file grows and a
// crash leaves at most a last record whose length or CRC does not check. No reader here (the
// tests bring their own). Not thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace dlt {

// CRC-32C (Castagnoli, reflected polynomial 0x82f63b78) of data, continuing from `crc`.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
// TFRecord's masked CRC: rotate right by 15 bits and add 0xa282ead8.
uint32_t masked_crc32c(const void* data, size_t size);

// One record framed as above.
std::string tfrecord_frame(const std::string& data);

class TfRecordWriter {
 public:
  // Creates `path` (O_EXCL: an existing file is never appended to); throws Error naming it.
  explicit TfRecordWriter(const std::string& path);
  ~TfRecordWriter();
  TfRecordWriter(const TfRecordWriter&) = delete;
  TfRecordWriter& operator=(const TfRecordWriter&) = delete;

  // Appends one record in a single write(2); throws Error naming the file when it fails.
  void write(const std::string& data);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace dlt
