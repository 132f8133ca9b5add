// Writes the seed inputs that are easier made in C++ than in make_corpus.sh: images in every
// accepted format (PNG, JPEG, BMP, TGA through the project's own encoder; GIF and PNM by hand),
// grey and RGB, as fuzz_image_decode inputs (a mode byte, then the file), and rendezvous store
// messages for fuzz_tcp_store. Usage: make_seeds CORPUS_DIR (gets fuzz_image_decode/ and
// fuzz_tcp_store/; both must exist).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "data/encode.h"
#include "data/image.h"
#include "dist/store_protocol.h"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void put(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// A small test picture: a gradient with a square, grey or RGB.
dlt::Image picture(int h, int w, int c) {
  dlt::Image img(h, w, c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) {
        const bool square = y > h / 4 && y < 3 * h / 4 && x > w / 4 && x < 3 * w / 4;
        img.at(y, x)[k] = static_cast<uint8_t>(square ? 40 * (k + 1) : (x * 255 / w + y * 17 + k * 60) % 256);
      }
  return img;
}

std::string pnm(const dlt::Image& img) {
  std::string out =
      (img.channels == 1 ? "P5\n" : "P6\n") + std::to_string(img.width) + " " + std::to_string(img.height) + "\n255\n";
  return out + std::string(img.pixels.begin(), img.pixels.end());
}

// A GIF89a with a 4-colour palette whose LZW stream sends a clear code before every pixel, so
// the code width stays 3 bits (a valid, uncompressed-style stream).
std::string gif(int h, int w) {
  auto u16 = [](int v) { return std::string{static_cast<char>(v & 0xff), static_cast<char>(v >> 8)}; };
  std::string out = "GIF89a" + u16(w) + u16(h) + std::string("\x81\x00\x00", 3);
  out += std::string("\x00\x00\x00\xff\x00\x00\x00\xff\x00\xff\xff\xff", 12);
  out += "," + u16(0) + u16(0) + u16(w) + u16(h) + std::string(1, '\0') + std::string(1, '\x02');
  std::string bits;
  uint32_t acc = 0;
  int nbits = 0;
  auto code = [&](uint32_t c) {
    acc |= c << nbits, nbits += 3;
    while (nbits >= 8) bits.push_back(static_cast<char>(acc & 0xff)), acc >>= 8, nbits -= 8;
  };
  for (int i = 0; i < h * w; ++i) code(4), code(static_cast<uint32_t>((i / w + i % w) % 4));
  code(5);
  if (nbits > 0) bits.push_back(static_cast<char>(acc & 0xff));
  for (size_t at = 0; at < bits.size(); at += 255) {
    const std::string block = bits.substr(at, 255);
    out += static_cast<char>(block.size()) + block;
  }
  return out + std::string(1, '\0') + ";";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds CORPUS_DIR\n");
    return 2;
  }
  const std::string dir = argv[1], images = dir + "/fuzz_image_decode/", store = dir + "/fuzz_tcp_store/";
  const std::string tmp = images + "tmp-seed";
  std::vector<std::pair<std::string, std::string>> files;  // name, bytes
  for (int c : {1, 3}) {
    const dlt::Image img = picture(12, 10, c);
    for (const char* ext : {".png", ".jpg", ".bmp", ".tga"}) {
      dlt::write_image(tmp + ext, img, 75);
      files.push_back({std::string(c == 1 ? "grey" : "rgb") + ext, slurp(tmp + ext)});
      std::remove((tmp + ext).c_str());
    }
    files.push_back({std::string(c == 1 ? "grey.pgm" : "rgb.ppm"), pnm(img)});
  }
  files.push_back({"palette.gif", gif(6, 7)});
  // Label images: class values 0, 1, 7 and 255 (integer LabelIDs), and road / sky colours.
  dlt::Image labels(8, 8, 1), colours(8, 8, 3);
  for (int i = 0; i < 64; ++i) {
    labels.pixels[i] = static_cast<uint8_t>(i % 4 == 3 ? 255 : i % 4 == 2 ? 7 : i % 4);
    const bool road = i % 3 == 0;
    colours.pixels[3 * i] = 128, colours.pixels[3 * i + 1] = road ? 64 : 128, colours.pixels[3 * i + 2] = 128;
  }
  dlt::write_image(tmp + ".png", labels);
  files.push_back({"labels-grey.png", slurp(tmp + ".png")});
  dlt::write_image(tmp + ".png", colours);
  files.push_back({"labels-rgb.png", slurp(tmp + ".png")});
  std::remove((tmp + ".png").c_str());
  // Mode bytes (fuzz_image_decode.cpp): 0/1 grey/RGB via stb, 4/5 with libjpeg-turbo, 2 as
  // stored, 3 integer label IDs, 7 RGB label IDs.
  for (const auto& [name, bytes] : files)
    for (int mode : {0, 1, 2, 3, 4, 5, 7})
      put(images + std::to_string(mode) + "-" + name, std::string(1, char(mode)) + bytes);

  // Store streams: server side (even first byte) and client side (odd first byte).
  const std::string set = dlt::encode_store_request({'S', "rank0/addr", "10.0.0.1:29500"});
  const std::string get = dlt::encode_store_request({'G', "rank0/addr", ""});
  const std::string id = dlt::encode_store_request({'S', "nccl_id", std::string(128, '\x5a')});
  put(store + "server-set-get", std::string(1, '\0') + set + get);
  put(store + "server-ids", std::string(1, '\0') + id + set + get + get);
  put(store + "server-get-missing", std::string(1, '\0') + get);
  put(store + "client-replies", std::string(1, '\1') + dlt::encode_store_get_reply(std::nullopt) +
                                    dlt::encode_store_get_reply(std::string("10.0.0.1:29500")));
  put(store + "client-missing", std::string(1, '\1') + dlt::encode_store_get_reply(std::nullopt));
  return 0;
}
