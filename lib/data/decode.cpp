// Image decoding: file bytes -> libjpeg-turbo (JPEG) or stb_image (the rest) -> channel conversion.
// The file is read here so that open/read failures report the OS reason.
#include "data/decode.h"

#include <stb/stb_image.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "util/error.h"
#include "util/one_line.h"

#include <turbojpeg.h>

namespace dlt {

const char* const kBadImageAdvice = " (remove or replace the file, or set OnBadImage: skip)";

namespace {

[[noreturn]] void fail(const std::string& name, const std::string& reason) {
  throw DataError(name + ": cannot decode image: " + reason + kBadImageAdvice);
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

// stb_image's JPEG test: 0xFF, any number of 0xFF fill bytes, then D8. Such bytes never reach
// stb_image (not even its header reader): its JPEG decoder in Debian 12 (2.27) reads and writes
// past its Huffman tables on corrupt data (found by tests/fuzz/fuzz_image_decode: a table of
// more than 256 codes; a code whose symbol index is past the table), so libjpeg-turbo, which
// checks its tables, reads every JPEG.
bool stb_reads_as_jpeg(const uint8_t* b, size_t size) {
  size_t soi = 0;
  while (soi < size && b[soi] == 0xFF) ++soi;
  return soi > 0 && soi < size && b[soi] == 0xD8;
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

// stb_image 2.27 grows its PNG data buffer to a chunk's claimed length before reading the
// chunk (found by tests/fuzz/fuzz_image_decode: a 159-byte PNG made it allocate 2 GiB). A
// chunk longer than the bytes left is refused first (stb_image fails on it anyway, after the
// allocation); chunks are walked up to IEND, as stb_image reads them.
void check_png_chunks(const uint8_t* b, size_t size, const std::string& name) {
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size < 8 || std::memcmp(b, kSignature, 8) != 0) return;
  for (size_t i = 8; i + 8 <= size;) {
    const uint64_t length = uint64_t(b[i]) << 24 | uint64_t(b[i + 1]) << 16 | uint64_t(b[i + 2]) << 8 | b[i + 3];
    const std::string type(reinterpret_cast<const char*>(b + i + 4), 4);
    const uint64_t left = size - i - 8;
    if (length > left)
      fail(name, "corrupt PNG: chunk '" + one_line(type) + "' at byte " + std::to_string(i) + " claims " +
                     std::to_string(length) + " bytes, but only " + std::to_string(left) + " follow");
    if (type == "IEND") return;
    i += 12 + length;  // length, type, data, CRC
  }
}

void check_too_many_pixels(int w, int h, const std::string& name) {
  if (int64_t(w) * h > kMaxImagePixels)
    fail(name, "its header claims " + std::to_string(w) + "x" + std::to_string(h) + " pixels, over the limit of " +
                   std::to_string(kMaxImagePixels) + " (a corrupt file, or resize it below 8192x8192)");
}

// One libjpeg-turbo handle per thread, made anew after any error or warning: libjpeg-turbo 2.1
// (Debian 12) leaves a handle in a state where the next header read can report success with
// a 0x0 image, or an earlier error's message.
struct TurboHandle {
  tjhandle h = nullptr;
  ~TurboHandle() { reset(); }
  void reset() {
    if (h) tjDestroy(h);
    h = nullptr;
  }
};
thread_local TurboHandle g_turbo;

tjhandle turbo_handle(const std::string& name) {
  if (!g_turbo.h) g_turbo.h = tjInitDecompress();
  if (!g_turbo.h) fail(name, "libjpeg-turbo could not start");
  return g_turbo.h;
}

[[noreturn]] void fail_turbo(const std::string& name) {
  const std::string why = tjGetErrorStr2(g_turbo.h);
  g_turbo.reset();
  fail(name, "libjpeg-turbo: " + why);
}

// A JPEG's width and height and whether it is grey, from its header (libjpeg-turbo).
void jpeg_header(const uint8_t* b, size_t size, const std::string& name, int& w, int& h, bool& grey) {
  tjhandle t = turbo_handle(name);
  int subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(t, b, static_cast<unsigned long>(size), &w, &h, &subsamp, &colorspace) != 0) fail_turbo(name);
  check_dimensions(w, h, name);
  check_too_many_pixels(w, h, name);
  grey = colorspace == TJCS_GRAY;
}

// Decodes a JPEG with libjpeg-turbo to `channels` (1 or 3; 0 = as stored: 1 for grey, else 3).
// Data libjpeg-turbo only warns about (a truncated scan: the rest is grey) is kept, as libjpeg's
// djpeg and MATLAB's imread keep it.
void decode_jpeg(const std::vector<uint8_t>& bytes, const std::string& name, int channels, Image& out) {
  int w = 0, h = 0;
  bool grey = false;
  jpeg_header(bytes.data(), bytes.size(), name, w, h, grey);
  const int src_c = grey ? 1 : 3;
  if (channels == 0) channels = src_c;
  thread_local std::vector<uint8_t> scratch;
  uint8_t* dst;
  if (src_c == channels) {
    out.height = h;
    out.width = w;
    out.channels = channels;
    out.pixels.resize(size_t(h) * w * channels);
    dst = out.pixels.data();
  } else {
    scratch.resize(size_t(h) * w * src_c);
    dst = scratch.data();
  }
  tjhandle t = turbo_handle(name);
  if (tjDecompress2(t, bytes.data(), static_cast<unsigned long>(bytes.size()), dst, w, 0, h,
                    grey ? TJPF_GRAY : TJPF_RGB, 0) != 0) {
    if (tjGetErrorCode(t) == TJERR_FATAL) fail_turbo(name);
    g_turbo.reset();  // a warning: the image is kept, the handle is not
  }
  if (src_c != channels) convert(dst, h, w, src_c, channels, out);
}

// Decodes with stb_image (never a JPEG: stb_reads_as_jpeg) to `channels`, 0 = as stored.
void decode_stb(const std::vector<uint8_t>& bytes, const std::string& name, int channels, Image& out) {
  int w = 0, h = 0, n = 0;
  uint8_t* px = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n, 0);
  if (!px) {
    const char* why = stbi_failure_reason();
    fail(name, std::string("stb_image: ") + (why ? why : "unknown error") +
                   " (not a PNG, JPEG, BMP, TGA, GIF or PNM image?)");
  }
  std::unique_ptr<uint8_t, void (*)(void*)> guard(px, &stbi_image_free);
  check_dimensions(w, h, name);
  convert(px, h, w, n, channels ? channels : (n >= 3 ? 3 : 1), out);
}

// Refuses a header that claims more than kMaxImagePixels, before any decoder allocates for it.
// What stb_image cannot read the header of is left to the decoder's own error.
void check_pixels(const std::vector<uint8_t>& bytes, const std::string& name) {
  int w = 0, h = 0, n = 0;
  if (bytes.size() > size_t(INT32_MAX)) fail(name, "file larger than 2 GiB");
  check_pnm_header(bytes.data(), bytes.size(), name);
  check_png_chunks(bytes.data(), bytes.size(), name);
  if (!stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n)) return;
  check_dimensions(w, h, name);
  check_too_many_pixels(w, h, name);
}

// Decodes any accepted format to `channels` (1 or 3; 0 = as stored).
void decode_any(const std::vector<uint8_t>& bytes, const std::string& name, int channels, Image& out) {
  if (bytes.empty()) fail(name, "the file is empty (0 bytes)");
  if (bytes.size() > size_t(INT32_MAX)) fail(name, "file larger than 2 GiB");
  if (stb_reads_as_jpeg(bytes.data(), bytes.size())) return decode_jpeg(bytes, name, channels, out);
  check_pixels(bytes, name);
  decode_stb(bytes, name, channels, out);
}

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
  decode_any(bytes, name, channels, out);
}

void decode_image(const std::string& path, int channels, Image& out) {
  thread_local std::vector<uint8_t> bytes;
  read_file(path, bytes);
  decode_image_memory(bytes, path, channels, out);
}

void decode_image_as_stored(const std::string& path, Image& out) {
  thread_local std::vector<uint8_t> bytes;
  read_file(path, bytes);
  decode_any(bytes, path, 0, out);
}

Image decode_image(const std::string& path, int channels) {
  Image img;
  decode_image(path, channels, img);
  return img;
}

void image_size(const std::string& path, int& height, int& width) {
  int channels = 0;
  image_header(path, height, width, channels);
}

void image_header(const std::string& path, int& height, int& width, int& channels) {
  // The header: the first 256 KiB, or the whole file when the header does not end there (large
  // metadata before a JPEG's frame).
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw DataError(path + ": cannot open image: " + std::strerror(errno));
  std::vector<uint8_t> head(256 << 10);
  head.resize(std::fread(head.data(), 1, head.size(), f));
  std::fclose(f);
  if (head.empty()) fail(path, "the file is empty (0 bytes)");
  const bool whole = head.size() < (256u << 10);
  if (stb_reads_as_jpeg(head.data(), head.size())) {
    if (!whole) read_file(path, head);  // libjpeg-turbo reads the header from the whole file
    if (head.size() > size_t(INT32_MAX)) fail(path, "file larger than 2 GiB");
    bool grey = false;
    jpeg_header(head.data(), head.size(), path, width, height, grey);
    channels = grey ? 1 : 3;
    return;
  }
  int n = 0;
  check_pnm_header(head.data(), head.size(), path);
  int ok = stbi_info_from_memory(head.data(), static_cast<int>(head.size()), &width, &height, &n);
  if (!ok && !whole) {
    read_file(path, head);
    if (head.size() > size_t(INT32_MAX)) fail(path, "file larger than 2 GiB");
    check_pnm_header(head.data(), head.size(), path);
    ok = stbi_info_from_memory(head.data(), static_cast<int>(head.size()), &width, &height, &n);
  }
  if (!ok) {
    const char* why = stbi_failure_reason();
    fail(path, std::string("stb_image: ") + (why ? why : "unknown error"));
  }
  check_dimensions(width, height, path);
  channels = n <= 2 ? 1 : 3;  // grey (+ alpha) or RGB (+ alpha, palette)
}

}  // namespace dlt
