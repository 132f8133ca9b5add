#include "train/event_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "util/error.h"
#include "util/files.h"

namespace dlt {

namespace {

// The protobuf wire format: a key is (field << 3) | wire type; 0 varint, 1 fixed64,
// 2 length-delimited, 5 fixed32; integers little-endian.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void key(std::string& out, uint32_t field, Wire wire) { varint(out, (uint64_t{field} << 3) | wire); }

void fixed(std::string& out, uint64_t bits, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void bytes_field(std::string& out, uint32_t field, const std::string& value) {
  key(out, field, kBytes);
  varint(out, value.size());
  out += value;
}

void int_field(std::string& out, uint32_t field, int64_t value) {
  key(out, field, kVarint);
  varint(out, static_cast<uint64_t>(value));  // negative int64: ten bytes, as protobuf does
}

// Event.wall_time (1) and Event.step (2).
std::string event_head(double wall_time, int64_t step) {
  std::string e;
  uint64_t bits;
  std::memcpy(&bits, &wall_time, sizeof bits);
  key(e, 1, kFixed64);
  fixed(e, bits, 8);
  if (step != 0) int_field(e, 2, step);  // proto3: a zero is not written
  return e;
}

// Event.summary (5) holding the given Summary.Value messages.
std::string with_summary(std::string event, const std::vector<std::string>& values) {
  std::string summary;
  for (const auto& v : values) bytes_field(summary, 1, v);
  bytes_field(event, 5, summary);
  return event;
}

}  // namespace

std::string encode_file_version_event(double wall_time, const std::string& version) {
  std::string e = event_head(wall_time, 0);
  bytes_field(e, 3, version);
  return e;
}

std::string encode_scalars_event(double wall_time, int64_t step,
                                 const std::vector<std::pair<std::string, float>>& values) {
  std::vector<std::string> encoded;
  for (const auto& [tag, value] : values) {
    std::string v;
    bytes_field(v, 1, tag);
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    key(v, 2, kFixed32);
    fixed(v, bits, 4);
    encoded.push_back(std::move(v));
  }
  return with_summary(event_head(wall_time, step), encoded);
}

std::string encode_image_event(double wall_time, int64_t step, const std::string& tag, int height, int width,
                               int colorspace, const std::string& encoded) {
  std::string image;
  int_field(image, 1, height);
  int_field(image, 2, width);
  int_field(image, 3, colorspace);
  bytes_field(image, 4, encoded);
  std::string v;
  bytes_field(v, 1, tag);
  bytes_field(v, 4, image);
  return with_summary(event_head(wall_time, step), {v});
}

std::string event_file_name(double wall_time) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == 0) std::strcpy(host, "localhost");
  return "events.out.tfevents." + std::to_string(static_cast<int64_t>(wall_time)) + "." + host;
}

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

EventFileWriter::EventFileWriter(const std::string& dir) {
  make_dirs(dir);
  const double now = wall_time_now();
  const std::string base = (std::filesystem::path(dir) / event_file_name(now)).string();
  std::string path = base;
  struct stat st;
  for (int n = 1; ::stat(path.c_str(), &st) == 0; ++n) path = base + "." + std::to_string(n);
  file_ = std::make_unique<TfRecordWriter>(path);
  file_->write(encode_file_version_event(now));
}

void EventFileWriter::add_scalars(int64_t step, const std::vector<std::pair<std::string, float>>& values) {
  file_->write(encode_scalars_event(wall_time_now(), step, values));
}

void EventFileWriter::add_image(int64_t step, const std::string& tag, int height, int width, int colorspace,
                                const std::string& encoded) {
  file_->write(encode_image_event(wall_time_now(), step, tag, height, width, colorspace, encoded));
}

}  // namespace dlt
