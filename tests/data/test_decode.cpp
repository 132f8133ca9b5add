// decode_image: PNG/BMP/TGA exact, JPEG close, grey<->RGB conversion, and every bad input.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "data/decode.h"
#include "data_test_util.h"
#include "util/error.h"

using namespace dlt;
using dlt::test::TempDir;

namespace {

std::string decode_error(const std::string& path) {
  try {
    decode_image(path, 3);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no DataError";
}

double mean_abs_diff(const Image& a, const Image& b) {
  double s = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) s += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
  return s / double(a.pixels.size());
}

}  // namespace

TEST_CASE("decode lossless formats exactly", "[data]") {
  TempDir d;
  const Image rgb = test::pattern_image(5, 7, 3, 11);
  for (const char* name : {"a.png", "a.bmp", "a.tga"}) {
    test::put_image(d / name, rgb);
    Image out = decode_image(d / name, 3);
    CHECK(out.height == 5);
    CHECK(out.width == 7);
    CHECK(out.channels == 3);
    CHECK(out.pixels == rgb.pixels);
  }
}

TEST_CASE("decode converts grey and RGB like MATLAB", "[data]") {
  TempDir d;
  const Image grey = test::pattern_image(3, 4, 1, 5);
  test::put_image(d / "g.png", grey);
  Image rgb = decode_image(d / "g.png", 3);
  REQUIRE(rgb.channels == 3);
  for (int i = 0; i < 12; ++i) {
    CHECK(rgb.pixels[3 * i] == grey.pixels[i]);
    CHECK(rgb.pixels[3 * i + 2] == grey.pixels[i]);
  }
  Image colour(1, 2, 3);
  colour.pixels = {255, 0, 0, 10, 200, 30};
  test::put_image(d / "c.png", colour);
  Image g = decode_image(d / "c.png", 1);
  REQUIRE(g.channels == 1);
  CHECK(int(g.pixels[0]) == 76);   // round(0.2989 * 255)
  CHECK(int(g.pixels[1]) == 124);  // round(2.989 + 117.4 + 3.42)
}

TEST_CASE("decode JPEG through libjpeg-turbo, as RGB, grey and as stored", "[data]") {
  TempDir d;
  Image smooth(16, 16, 3);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x)
      for (int k = 0; k < 3; ++k) smooth.at(y, x)[k] = uint8_t(40 + 8 * x + 4 * y + 20 * k);
  test::put_image(d / "s.jpg", smooth);
  Image b = decode_image(d / "s.jpg", 3);
  CHECK(mean_abs_diff(b, smooth) < 6.0);
  Image gb = decode_image(d / "s.jpg", 1);
  CHECK(gb.channels == 1);
  CHECK(std::abs(int(gb.pixels[0]) - int(rgb_to_grey(b.pixels[0], b.pixels[1], b.pixels[2]))) <= 1);
  Image stored;
  decode_image_as_stored(d / "s.jpg", stored);
  CHECK(stored.channels == 3);
  CHECK(stored.pixels == b.pixels);
  int h = 0, w = 0;
  image_size(d / "s.jpg", h, w);
  CHECK(h == 16);
  CHECK(w == 16);
  // A grey image through a JPEG (stb_image_write stores it as 3 components) decodes to grey.
  Image grey(8, 12, 1);
  for (size_t i = 0; i < grey.pixels.size(); ++i) grey.pixels[i] = uint8_t(10 * (i % 12));
  test::put_image(d / "g.jpg", grey);
  Image g = decode_image(d / "g.jpg", 1);
  CHECK(g.channels == 1);
  CHECK(g.width == 12);
  CHECK(mean_abs_diff(g, grey) < 6.0);
}

TEST_CASE("decode failures throw DataError naming the file", "[data]") {
  TempDir d;
  test::write_file(d / "empty.png", "");
  std::string msg = decode_error(d / "empty.png");
  CHECK(msg.find(d / "empty.png") != std::string::npos);
  CHECK(msg.find("empty") != std::string::npos);

  test::write_file(d / "text.jpg", "this is not an image at all");
  msg = decode_error(d / "text.jpg");
  CHECK(msg.find(d / "text.jpg") != std::string::npos);

  msg = decode_error(d / "missing.png");
  CHECK(msg.find(d / "missing.png") != std::string::npos);
  CHECK(msg.find("No such file") != std::string::npos);

  // A PNG cut in half and a JPEG with its header torn off.
  test::put_image(d / "full.png", test::pattern_image(32, 32, 3));
  test::put_image(d / "full.jpg", test::pattern_image(32, 32, 3));
  for (const char* name : {"full.png", "full.jpg"}) {
    std::ifstream f(d / name, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    const std::string cut = std::string(name) == "full.png" ? bytes.substr(0, bytes.size() / 2) : bytes.substr(0, 40);
    const std::string bad = d / (std::string("cut_") + name);
    test::write_file(bad, cut);
    msg = decode_error(bad);
    CHECK(msg.find(bad) != std::string::npos);
  }
}

// Found by tests/fuzz/fuzz_image_decode: a 90-byte GIF claiming 17990 x 17990 pixels made
// stb_image allocate and clear 1.3 GB (10 s). Headers over kMaxImagePixels are refused first.
TEST_CASE("decode refuses a header claiming more than kMaxImagePixels before allocating", "[data]") {
  auto refused = [](const std::vector<uint8_t>& bytes) {
    Image img;
    try {
      decode_image_memory(bytes, "huge", 3, img);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("no DataError");
  };
  // GIF89a, 17990 x 17990 (0x4646), global palette of 4, then an image of 7 x 6.
  // (Built in one go: GCC 12's -Warray-bounds misreads a resize of the 13-byte header.)
  std::vector<uint8_t> gif = {'G', 'I', 'F', '8', '9', 'a', 0x46, 0x46, 0x46, 0x46, 0x81, 0, 0};
  const std::vector<uint8_t> palette(12, 0xff), image = {0x2c, 0, 0, 0, 0, 7, 0, 6, 0, 0, 2, 2, 0x44, 0x01, 0, 0x3b};
  gif.insert(gif.end(), palette.begin(), palette.end());
  gif.insert(gif.end(), image.begin(), image.end());
  CHECK_THAT(refused(gif), Catch::Contains("huge: cannot decode image: its header claims 17990x17990 pixels"));
  // A baseline JPEG whose frame header claims 60000 x 60000 (JPEG's own limit is 65535), then
  // a scan header (libjpeg-turbo reads the header up to it).
  std::vector<uint8_t> jpeg = {0xff, 0xd8, 0xff, 0xc0, 0, 17,   8,    0xea, 0x60, 0xea, 0x60, 3,  1,
                               0x11, 0,    2,    0x11, 0, 3,    0x11, 0,    0xff, 0xda, 0,    12, 3,
                               1,    0,    2,    0x11, 3, 0x11, 0,    0x3f, 0,    0xff, 0xd9};
  CHECK_THAT(refused(jpeg), Catch::Contains("60000x60000 pixels, over the limit of 67108864"));
  // Within the limit the same kind of file decodes (or fails on its data, not its size).
  CHECK_THAT(refused({'G', 'I', 'F', '8', '9', 'a', 7, 0, 6, 0, 0x81, 0, 0}), !Catch::Contains("over the limit"));
}

// Found by tests/fuzz/fuzz_image_decode: stb_image decodes a GIF of width 0 (here 0 x 43520);
// the empty label image then made resize_nearest index pixel -1 of a null buffer.
TEST_CASE("decode refuses an image without pixels", "[data]") {
  const std::vector<uint8_t> gif = {'G', 'I', 'F', '8',  '9',  'a', 0,    0,    0,    0xaa, 0x81, 0,    0, 0,
                                    1,   0,   0,   0x61, 0x30, 0,   0x30, 0xe6, 0xff, 0xff, 0xff, 0x2c, 0, 0};
  Image img;
  CHECK_THROWS_WITH(decode_image_memory(gif, "empty.gif", 1, img),
                    Catch::Contains("empty.gif: cannot decode image: it has no pixels (0x43520)"));
  TempDir dir;
  const std::string path = dir.str() + "/empty.gif";
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  std::fwrite(gif.data(), 1, gif.size(), f);
  std::fclose(f);
  CHECK_THROWS_WITH(decode_image_as_stored(path, img), Catch::Contains("it has no pixels"));
  int h = 0, w = 0;
  CHECK_THROWS_WITH(image_size(path, h, w), Catch::Contains("it has no pixels"));
}

// Found by tests/fuzz/fuzz_image_decode: a JPEG Huffman table whose 16 code counts add up to
// more than 256 made stb_image 2.27 (Debian 12) write past its tables (UBSan: index 257 out of
// bounds for stbi_uc[257]); another input made its decoder read a symbol past them (index 839
// out of bounds for stbi_uc[256]). JPEG bytes never reach stb_image now: libjpeg-turbo refuses
// the table, in the decoder, as stored (label images) and in the header reader behind image_size.
TEST_CASE("decode refuses a JPEG Huffman table of more than 256 codes", "[data]") {
  std::vector<uint8_t> jpeg = {0xff, 0xd8, 0xff, 0xc4, 0x01, 0x23, 0x00};  // DHT of 0x123 bytes, DC table 0
  for (int i = 0; i < 16; ++i) jpeg.push_back(17);                         // 16 x 17 = 272 codes
  jpeg.resize(jpeg.size() + 272, 0);
  jpeg.push_back(0xff), jpeg.push_back(0xd9);
  const std::string refusal = "cannot decode image: libjpeg-turbo: Bogus Huffman table definition";
  Image img;
  CHECK_THROWS_WITH(decode_image_memory(jpeg, "dht.jpg", 3, img), Catch::Contains("dht.jpg: " + refusal));
  TempDir dir;
  const std::string path = dir.str() + "/dht.jpg";
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  std::fwrite(jpeg.data(), 1, jpeg.size(), f);
  std::fclose(f);
  CHECK_THROWS_WITH(decode_image_as_stored(path, img), Catch::Contains(refusal));
  int h = 0, w = 0;
  CHECK_THROWS_WITH(image_size(path, h, w), Catch::Contains(refusal));
  // Fill bytes before the start-of-image marker (FF FF D8) make a JPEG for stb_image, which
  // would read the table; libjpeg-turbo refuses the file.
  std::vector<uint8_t> filled = jpeg;
  filled.insert(filled.begin(), 0xff);
  CHECK_THROWS_WITH(decode_image_memory(filled, "fill.jpg", 3, img),
                    Catch::Contains("fill.jpg: cannot decode image: libjpeg-turbo: Not a JPEG file"));
}

// libjpeg-turbo 2.1 (Debian 12) leaves its handle broken after a header it refuses: the next
// header read on it reports success with 0x0 pixels, so a valid JPEG after a corrupt one (on
// the same loader thread) was refused as "it has no pixels (0x0)". The handle is made anew.
TEST_CASE("decode reads a valid JPEG after a refused one on the same thread", "[data]") {
  TempDir d;
  test::put_image(d / "good.jpg", test::pattern_image(10, 20, 3));
  std::ifstream f(d / "good.jpg", std::ios::binary);
  const std::vector<uint8_t> good((std::istreambuf_iterator<char>(f)), {});
  const std::vector<uint8_t> no_scan = {0xff, 0xd8, 0xff, 0xc0, 0,    17, 8, 0,    4, 0,    4,   3,
                                        1,    0x11, 0,    2,    0x11, 0,  3, 0x11, 0, 0xff, 0xd9};
  Image img;
  for (int round = 0; round < 3; ++round) {
    CHECK_THROWS_WITH(decode_image_memory(no_scan, "bad.jpg", 3, img), Catch::Contains("missing SOS marker"));
    decode_image_memory(good, "good.jpg", 3, img);
    CHECK(img.height == 10);
    CHECK(img.width == 20);
  }
}

// Found by the long fuzzing campaign (scripts/fuzz_campaign.sh): stb_image 2.27 grows its PNG
// data buffer to a chunk's claimed length before reading it, so a 159-byte PNG whose second
// IDAT claimed most of 4 GiB made it allocate 2 GiB. A chunk longer than the rest of the file
// is refused before stb_image reads the file; a valid PNG, and bytes after IEND, still decode.
TEST_CASE("decode refuses a PNG chunk longer than the rest of the file", "[data]") {
  TempDir d;
  test::put_image(d / "ok.png", test::pattern_image(6, 5, 3));
  std::ifstream f(d / "ok.png", std::ios::binary);
  std::vector<uint8_t> png((std::istreambuf_iterator<char>(f)), {});
  Image img;
  std::vector<uint8_t> trailing = png;
  trailing.insert(trailing.end(), {0xde, 0xad, 0xbe, 0xef, 0xff});  // after IEND: ignored
  decode_image_memory(trailing, "trailing.png", 3, img);
  CHECK(img.width == 5);
  // IHDR is the first chunk (at byte 8); claim 0x7ffffff0 bytes for the chunk after it.
  const size_t second = 8 + 12 + 13;
  std::vector<uint8_t> bad = png;
  bad[second] = 0x7f, bad[second + 1] = 0xff, bad[second + 2] = 0xff, bad[second + 3] = 0xf0;
  CHECK_THROWS_WITH(decode_image_memory(bad, "bad.png", 3, img),
                    Catch::Contains("bad.png: cannot decode image: corrupt PNG: chunk '") &&
                        Catch::Contains("at byte 33 claims 2147483632 bytes, but only"));
}

// Found by tests/fuzz/fuzz_image_decode: stb_image 2.27 reads a PNM header's numbers into an
// int without an overflow check (UBSan: signed integer overflow).
TEST_CASE("decode refuses a PNM header number over 2^24", "[data]") {
  const std::string pnm = "P6 3120 0000000004000000000000 255\n";
  Image img;
  CHECK_THROWS_WITH(decode_image_memory(std::vector<uint8_t>(pnm.begin(), pnm.end()), "big.ppm", 3, img),
                    Catch::Contains("big.ppm: cannot decode image: corrupt PNM header: a number over 16777216"));
  const std::string ok = "P5\n# 99999999999999999 in a comment\n2 1\n255\n\x01\x02";
  decode_image_memory(std::vector<uint8_t>(ok.begin(), ok.end()), "ok.pgm", 1, img);
  CHECK(img.width == 2);
  CHECK(img.pixels == std::vector<uint8_t>{1, 2});
}
