// Image decoding: file bytes -> stb_image (or libjpeg-turbo for JPEG) -> channel conversion.
// The file is read here so that open/read failures report the OS reason.
#include "data/decode.h"

#include <stb/stb_image.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "util/error.h"

#ifndef DLT_HAVE_TURBOJPEG
#define DLT_HAVE_TURBOJPEG 0
#endif
#if DLT_HAVE_TURBOJPEG
#include <turbojpeg.h>
#endif

namespace dlt {
namespace {

std::atomic<bool> g_use_turbo{DLT_HAVE_TURBOJPEG != 0};

[[noreturn]] void fail(const std::string& name, const std::string& reason) {
  throw DataError(name + ": cannot decode image: " + reason + " (remove or replace the file, or set OnBadImage: skip)");
}

void read_file(const std::string& path, std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw DataError(path + ": cannot open image: " + std::strerror(errno));
  std::unique_ptr<FILE, int (*)(FILE*)> guard(f, &std::fclose);
  bytes.clear();
  uint8_t buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + got);
  if (std::ferror(f)) throw DataError(path + ": cannot read image: " + std::strerror(errno));
}

// Converts interleaved pixels with `src_c` channels (1..4) into `out` with `channels`.
void convert(const uint8_t* src, int h, int w, int src_c, int channels, Image& out) {
  out.height = h;
  out.width = w;
  out.channels = channels;
  out.pixels.resize(size_t(h) * w * channels);
  const size_t n = size_t(h) * w;
  uint8_t* dst = out.pixels.data();
  if (src_c == channels) {
    std::memcpy(dst, src, n * channels);
    return;
  }
  const bool colour = src_c >= 3;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = src + i * src_c;
    if (channels == 1) {
      dst[i] = colour ? rgb_to_grey(p[0], p[1], p[2]) : p[0];
    } else if (colour) {
      dst[3 * i] = p[0];
      dst[3 * i + 1] = p[1];
      dst[3 * i + 2] = p[2];
    } else {
      dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = p[0];
    }
  }
}

// Refuses an image without pixels (stb_image decodes a GIF of width 0).
void check_dimensions(int w, int h, const std::string& name) {
  if (w <= 0 || h <= 0) fail(name, "it has no pixels (" + std::to_string(w) + "x" + std::to_string(h) + ")");
}

// stb_image 2.27 (Debian 12's libstb) writes past its Huffman tables when the 16 code counts of
// a JPEG DHT table add up to more than 256 (found by tests/fuzz/fuzz_image_decode): invalid
// JPEG, refused here before stb_image reads the bytes. In entropy-coded data 0xFF is always
// followed by 0x00 or a restart marker, so every FF C4 in the file is a DHT marker. Like
// stb_image, bytes past the end of the file read as 0 and the segment's own length is followed.
void check_jpeg_tables(const uint8_t* b, size_t size, const std::string& name) {
  size_t soi = 0;  // stb_image's JPEG test: 0xFF, any number of 0xFF fill bytes, then D8
  while (soi < size && b[soi] == 0xFF) ++soi;
  if (soi == 0 || soi == size || b[soi] != 0xD8) return;
  auto at = [&](size_t i) -> size_t { return i < size ? b[i] : 0; };
  for (size_t i = 2; i + 1 < size; ++i) {
    if (b[i] != 0xFF || b[i + 1] != 0xC4) continue;
    const size_t end = i + 2 + (at(i + 2) << 8 | at(i + 3));  // stb_image: while (L > 0)
    for (size_t p = i + 4; p < end;) {
      size_t codes = 0;
      for (int k = 1; k <= 16; ++k) codes += at(p + k);
      if (codes > 256)
        fail(name, "corrupt JPEG: a Huffman table (DHT at byte " + std::to_string(i) + ") has " +
                       std::to_string(codes) + " codes, more than 256");
      p += 17 + codes;
    }
  }
}

// stb_image 2.27 reads a PNM header's numbers into an int with no overflow check (found by
// tests/fuzz/fuzz_image_decode: undefined behaviour). Numbers over 2^24, stb_image's own limit
// on a dimension (a maxval is at most 65535), are refused before it reads them.
void check_pnm_header(const uint8_t* b, size_t size, const std::string& name) {
  if (size < 2 || b[0] != 'P' || (b[1] != '5' && b[1] != '6')) return;
  size_t i = 2;
  for (int k = 0; k < 3; ++k) {  // width, height, maxval, as stb_image reads them
    for (;;) {                   // whitespace and # comments
      while (i < size && std::isspace(b[i])) ++i;
      if (i >= size || b[i] != '#') break;
      while (i < size && b[i] != '\n' && b[i] != '\r') ++i;
    }
    int64_t v = 0;
    for (; i < size && b[i] >= '0' && b[i] <= '9'; ++i)
      if ((v = v * 10 + (b[i] - '0')) > (1 << 24)) fail(name, "corrupt PNM header: a number over 16777216");
  }
}

// The checks stb_image needs before it reads bytes (it has no guard of its own there).
void check_for_stb(const uint8_t* b, size_t size, const std::string& name) {
  check_jpeg_tables(b, size, name);
  check_pnm_header(b, size, name);
}

// Refuses a header that claims more than kMaxImagePixels, before any decoder allocates for it.
// What stb_image cannot read the header of is left to the decoder's own error.
void check_pixels(const std::vector<uint8_t>& bytes, const std::string& name) {
  int w = 0, h = 0, n = 0;
  if (bytes.size() > size_t(INT32_MAX)) fail(name, "file larger than 2 GiB");
  check_for_stb(bytes.data(), bytes.size(), name);
  if (!stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n)) return;
  check_dimensions(w, h, name);
  if (int64_t(w) * h > kMaxImagePixels)
    fail(name, "its header claims " + std::to_string(w) + "x" + std::to_string(h) + " pixels, over the limit of " +
                   std::to_string(kMaxImagePixels) + " (a corrupt file, or resize it below 8192x8192)");
}

bool is_jpeg(const std::vector<uint8_t>& b) { return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF; }

#if DLT_HAVE_TURBOJPEG
struct TurboHandle {
  tjhandle h = tjInitDecompress();
  std::vector<uint8_t> scratch;
  ~TurboHandle() {
    if (h) tjDestroy(h);
  }
};

// False when libjpeg-turbo only warns (slightly damaged data): the caller then tries stb.
bool decode_turbo(const std::vector<uint8_t>& bytes, const std::string& name, int channels, Image& out) {
  thread_local TurboHandle t;
  if (!t.h) fail(name, "libjpeg-turbo could not start");
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  auto* data = const_cast<unsigned char*>(bytes.data());
  if (tjDecompressHeader3(t.h, data, bytes.size(), &w, &h, &subsamp, &colorspace) != 0)
    fail(name, std::string("libjpeg-turbo: ") + tjGetErrorStr2(t.h));
  check_dimensions(w, h, name);
  if (int64_t(w) * h > kMaxImagePixels)  // a header stb_image could not read (check_pixels)
    fail(name, "its header claims " + std::to_string(w) + "x" + std::to_string(h) + " pixels, over the limit of " +
                   std::to_string(kMaxImagePixels));
  const bool grey = colorspace == TJCS_GRAY;
  const int src_c = grey ? 1 : 3;
  uint8_t* dst;
  if (src_c == channels) {
    out.height = h;
    out.width = w;
    out.channels = channels;
    out.pixels.resize(size_t(h) * w * channels);
    dst = out.pixels.data();
  } else {
    t.scratch.resize(size_t(h) * w * src_c);
    dst = t.scratch.data();
  }
  if (tjDecompress2(t.h, data, bytes.size(), dst, w, 0, h, grey ? TJPF_GRAY : TJPF_RGB, 0) != 0) {
    if (tjGetErrorCode(t.h) == TJERR_FATAL) fail(name, std::string("libjpeg-turbo: ") + tjGetErrorStr2(t.h));
    return false;
  }
  if (src_c != channels) convert(dst, h, w, src_c, channels, out);
  return true;
}
#endif

}  // namespace

const std::vector<std::string>& supported_image_extensions() {
  static const std::vector<std::string> exts = {".png", ".jpg", ".jpeg", ".bmp", ".tga",
                                                ".gif", ".pnm", ".ppm",  ".pgm"};
  return exts;
}

void decode_image_memory(const std::vector<uint8_t>& bytes, const std::string& name, int channels, Image& out) {
  if (channels != 1 && channels != 3)
    throw DataError(name + ": cannot decode to " + std::to_string(channels) +
                    " channels (InputSize must end in 1 or 3)");
  if (bytes.empty()) fail(name, "the file is empty (0 bytes)");
  check_pixels(bytes, name);
#if DLT_HAVE_TURBOJPEG
  if (is_jpeg(bytes) && g_use_turbo.load(std::memory_order_relaxed) && decode_turbo(bytes, name, channels, out)) return;
#endif
  int w = 0, h = 0, n = 0;
  uint8_t* px = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n, 0);
  if (!px) {
    const char* why = stbi_failure_reason();
    fail(name, std::string("stb_image: ") + (why ? why : "unknown error") +
                   (is_jpeg(bytes) ? "" : " (not a PNG, JPEG, BMP, TGA, GIF or PNM image?)"));
  }
  std::unique_ptr<uint8_t, void (*)(void*)> guard(px, &stbi_image_free);
  check_dimensions(w, h, name);
  convert(px, h, w, n, channels, out);
}

void decode_image(const std::string& path, int channels, Image& out) {
  thread_local std::vector<uint8_t> bytes;
  read_file(path, bytes);
  decode_image_memory(bytes, path, channels, out);
}

void decode_image_as_stored(const std::string& path, Image& out) {
  thread_local std::vector<uint8_t> bytes;
  read_file(path, bytes);
  if (bytes.empty()) fail(path, "the file is empty (0 bytes)");
  check_pixels(bytes, path);
  int w = 0, h = 0, n = 0;
  uint8_t* px = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n, 0);
  if (!px) {
    const char* why = stbi_failure_reason();
    fail(path, std::string("stb_image: ") + (why ? why : "unknown error"));
  }
  std::unique_ptr<uint8_t, void (*)(void*)> guard(px, &stbi_image_free);
  check_dimensions(w, h, path);
  convert(px, h, w, n, n >= 3 ? 3 : 1, out);
}

Image decode_image(const std::string& path, int channels) {
  Image img;
  decode_image(path, channels, img);
  return img;
}

void image_size(const std::string& path, int& height, int& width) {
  // The header, with its JPEG tables checked (check_jpeg_tables): the first 256 KiB, or the
  // whole file when the header does not end there (large metadata before a JPEG's frame).
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw DataError(path + ": cannot open image: " + std::strerror(errno));
  std::vector<uint8_t> head(256 << 10);
  head.resize(std::fread(head.data(), 1, head.size(), f));
  std::fclose(f);
  int n = 0;
  check_for_stb(head.data(), head.size(), path);
  int ok = stbi_info_from_memory(head.data(), static_cast<int>(head.size()), &width, &height, &n);
  if (!ok && head.size() == (256u << 10)) {
    read_file(path, head);
    if (head.size() > size_t(INT32_MAX)) fail(path, "file larger than 2 GiB");
    check_for_stb(head.data(), head.size(), path);
    ok = stbi_info_from_memory(head.data(), static_cast<int>(head.size()), &width, &height, &n);
  }
  if (!ok) {
    const char* why = stbi_failure_reason();
    fail(path, std::string("stb_image: ") + (why ? why : "unknown error"));
  }
  check_dimensions(width, height, path);
}

void set_jpeg_decoder(const std::string& name) {
  if (name == "stb") {
    g_use_turbo = false;
  } else if (name == "turbo") {
    if (!have_turbojpeg()) throw UsageError("JPEG decoder 'turbo': this build has no libjpeg-turbo (use stb)");
    g_use_turbo = true;
  } else {
    throw UsageError("unknown JPEG decoder '" + name + "' (use stb or turbo)");
  }
}

std::string jpeg_decoder() { return g_use_turbo ? "turbo" : "stb"; }
bool have_turbojpeg() { return DLT_HAVE_TURBOJPEG != 0; }

}  // namespace dlt
