// CRC-32C against the known answers (RFC 3720 B.4 and the common "123456789" check value),
// TFRecord framing and the hand-encoded Event protos byte by byte (protobuf wire format:
// key = field << 3 | wire type).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>

#include "train/event_file.h"
#include "util/files.h"
#include "util/error.h"
#include "util/tfrecord.h"

using namespace dlt;

namespace {
// A fresh folder under the system's temporary one, removed at the end of the test.
struct Folder {
  std::string path;
  Folder() {
    static int n = 0;
    path = (std::filesystem::temp_directory_path() /
            ("dlt-tfrecord-" + std::to_string(::getpid()) + "-" + std::to_string(n++)))
               .string();
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~Folder() { std::filesystem::remove_all(path); }
};
uint64_t le(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}
std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}
}  // namespace

TEST_CASE("tfrecord: CRC-32C known answers", "[tfrecord]") {
  CHECK(crc32c("123456789", 9) == 0xE3069283u);
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, '\0');
  for (int i = 0; i < 32; ++i) up[i] = static_cast<char>(i);
  CHECK(crc32c(zeros.data(), 32) == 0x8A9136AAu);  // RFC 3720 B.4
  CHECK(crc32c(ones.data(), 32) == 0x62A8AB43u);
  CHECK(crc32c(up.data(), 32) == 0x46DD794Eu);
  CHECK(crc32c("", 0) == 0u);
  // Continuing a CRC over a split buffer gives the whole buffer's.
  CHECK(crc32c("56789", 5, crc32c("1234", 4)) == 0xE3069283u);
  // mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8
  CHECK(masked_crc32c("123456789", 9) == 0xC78AB0E5u);
}

TEST_CASE("tfrecord: a record is length, masked CRC of it, data, masked CRC of data", "[tfrecord]") {
  const std::string data = "hello";
  const std::string r = tfrecord_frame(data);
  REQUIRE(r.size() == 8 + 4 + 5 + 4);
  CHECK(le(r, 0, 8) == 5);
  CHECK(le(r, 8, 4) == masked_crc32c(r.data(), 8));
  CHECK(r.substr(12, 5) == data);
  CHECK(le(r, 17, 4) == masked_crc32c(data.data(), 5));
  Folder dir;
  const std::string path = dir.path + "/x.tfrecord";
  {
    TfRecordWriter w(path);
    w.write(data);
    w.write("");
  }
  CHECK(read_file(path) == r + tfrecord_frame(""));
  CHECK_THROWS_AS(TfRecordWriter(path), Error);  // never appends to an existing file
}

TEST_CASE("event file: Event protos in the wire format", "[tfrecord]") {
  // wall_time 1.5: key 0x09 (field 1, fixed64) + the double's 8 bytes; file_version: 0x1a.
  CHECK(encode_file_version_event(1.5) ==
        bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x1a, 13}) + "brain.Event:2");
  // step 3: 0x10 0x03; summary (field 5): 0x2a len; Value (field 1): 0x0a len;
  // tag "a": 0x0a 0x01 'a'; simple_value 1.0f (field 2, fixed32): 0x15 00 00 80 3f.
  const std::string value = bytes({0x0a, 1, 'a', 0x15, 0, 0, 0x80, 0x3f});
  CHECK(encode_scalars_event(1.5, 3, {{"a", 1.0f}}) ==
        bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x10, 3, 0x2a, 10, 0x0a, 8}) + value);
  // Two values, a step needing two varint bytes (300 = 0xac 0x02).
  const std::string v2 = bytes({0x0a, 2, 'b', 'c', 0x15, 0, 0, 0x80, 0x3e});  // 0.25f
  CHECK(encode_scalars_event(1.5, 300, {{"a", 1.0f}, {"bc", 0.25f}}) ==
        bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x10, 0xac, 0x02, 0x2a, 21, 0x0a, 8}) + value +
            bytes({0x0a, 9}) + v2);
  // Image: height 0x08, width 0x10, colorspace 0x18, encoded 0x22; Value.image is field 4 (0x22).
  const std::string image = bytes({0x08, 2, 0x10, 3, 0x18, 4, 0x22, 3}) + "PNG";
  const std::string iv = bytes({0x0a, 1, 'p', 0x22, static_cast<int>(image.size())}) + image;
  CHECK(encode_image_event(1.5, 7, "p", 2, 3, 4, "PNG") ==
        bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x10, 7, 0x2a, static_cast<int>(iv.size() + 2), 0x0a,
               static_cast<int>(iv.size())}) +
            iv);
}

TEST_CASE("event file: named for TensorBoard, file_version first, never reused", "[tfrecord]") {
  Folder dir;
  const std::string sub = dir.path + "/tb";
  EventFileWriter a(sub);
  EventFileWriter b(sub);  // the same second: a second name
  CHECK(a.path() != b.path());
  const std::string name = std::filesystem::path(a.path()).filename().string();
  CHECK(name.rfind("events.out.tfevents.", 0) == 0);
  a.add_scalars(1, {{"train/loss", 2.0f}});
  const std::string text = read_file(a.path());
  const uint64_t n = le(text, 0, 8);
  const std::string first = text.substr(12, n);
  CHECK(first.substr(9) == bytes({0x1a, 13}) + "brain.Event:2");
  const std::string second = text.substr(12 + n + 4 + 12);
  CHECK(second.find("train/loss") != std::string::npos);
  CHECK(text.size() == 16 + n + 16 + encode_scalars_event(0, 1, {{"train/loss", 2.0f}}).size());
}
