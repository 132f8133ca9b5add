// Pareto front of (memory, accuracy) points on known sets and random sets with ties, and the
// scatter PNG read back with stb_image.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include <unistd.h>

#include "train/draw/canvas.h"
#include "train/draw/pareto.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

using namespace dlt;
namespace fs = std::filesystem;

namespace {

using Front = std::vector<size_t>;

bool dominates(const ParetoPoint& a, const ParetoPoint& b) {
  return a.memory_bytes <= b.memory_bytes && a.accuracy >= b.accuracy &&
         (a.memory_bytes < b.memory_bytes || a.accuracy > b.accuracy);
}

}  // namespace

TEST_CASE("pareto_front on known sets", "[train][pareto]") {
  CHECK(pareto_front({}).empty());
  CHECK(pareto_front({{"only", 10, 50}}) == Front{0});
  // E(50,50) A(100,70) B(200,80) are optimal; C is beaten by A, D by B (same accuracy).
  const std::vector<ParetoPoint> pts = {{"A", 100, 70}, {"B", 200, 80}, {"C", 150, 60}, {"D", 300, 80}, {"E", 50, 50}};
  CHECK(pareto_front(pts) == Front{4, 0, 1});
  // All dominated but one: the smallest network is also the most accurate.
  CHECK(pareto_front({{"a", 5, 60}, {"b", 1, 90}, {"c", 3, 89}, {"d", 1, 89}}) == Front{1});
}

TEST_CASE("pareto_front handles ties, duplicates and non-finite points", "[train][pareto]") {
  // Same memory: only the more accurate one. Same accuracy: only the smaller one.
  CHECK(pareto_front({{"a", 10, 70}, {"b", 10, 80}}) == Front{1});
  CHECK(pareto_front({{"a", 20, 80}, {"b", 10, 80}}) == Front{1});
  // Identical points do not dominate each other: both stay, in index order.
  CHECK(pareto_front({{"a", 10, 80}, {"b", 10, 80}, {"c", 5, 60}}) == Front{2, 0, 1});
  // NaN and inf points are neither on the front nor allowed to knock points off it.
  CHECK(pareto_front({{"nan", NAN, 99}, {"a", 10, 70}, {"inf", 1, INFINITY}}) == Front{1});
}

TEST_CASE("pareto_front matches the definition on random sets with ties", "[train][pareto]") {
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> mem(1, 8), acc(50, 58);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<ParetoPoint> pts;
    for (int i = 0; i < 12; ++i) pts.push_back({"p", double(mem(gen)), double(acc(gen))});
    const Front front = pareto_front(pts);
    std::vector<bool> on(pts.size(), false);
    for (size_t k = 0; k < front.size(); ++k) {
      on[front[k]] = true;
      if (k > 0) {
        CHECK(pts[front[k - 1]].memory_bytes <= pts[front[k]].memory_bytes);
        CHECK(pts[front[k - 1]].accuracy <= pts[front[k]].accuracy);
      }
    }
    for (size_t i = 0; i < pts.size(); ++i) {
      bool dominated = false;
      for (size_t j = 0; j < pts.size(); ++j) dominated = dominated || dominates(pts[j], pts[i]);
      CHECK(on[i] == !dominated);
    }
  }
}

TEST_CASE("pareto labels keep what distinguishes the points", "[train][pareto]") {
  std::string keys;
  // scripts/sweep.sh names: key=value parts joined by '_'. Before, every label was cut to
  // "InitialLearnRat..." (the first 15 characters), the same for all four points.
  CHECK(pareto_labels({"InitialLearnRate=0.01_conv1.NumFilters=4", "InitialLearnRate=0.01_conv1.NumFilters=8",
                       "InitialLearnRate=0.001_conv1.NumFilters=4", "InitialLearnRate=0.001_conv1.NumFilters=8"},
                      &keys) == std::vector<std::string>{"0.01 4", "0.01 8", "0.001 4", "0.001 8"});
  CHECK(keys == "InitialLearnRate, conv1.NumFilters");
  // --networks with a grid: the config name first; a value with '_' (from [28,28,1]) whole.
  CHECK(pareto_labels({"net01_conv1.NumFilters=20", "net02_conv1.NumFilters=32"}, &keys) ==
        std::vector<std::string>{"net01 20", "net02 32"});
  CHECK(keys == "conv1.NumFilters");
  CHECK(pareto_labels(
            {"input.InputSize=_28_28_1__InitialLearnRate=0.1", "input.InputSize=_32_32_1__InitialLearnRate=0.1"},
            &keys) == std::vector<std::string>{"_28_28_1_ 0.1", "_32_32_1_ 0.1"});
  CHECK(keys == "input.InputSize, InitialLearnRate");
  // A key not in every name keeps its name; plain names stay whole, long ones lose the middle.
  CHECK(pareto_labels({"a=1_b=2", "a=3"}, &keys) == std::vector<std::string>{"1 b=2", "3"});
  CHECK(keys == "a");
  CHECK(pareto_labels({"2x16", "a_very_long_network_name_variant_12"}, &keys) ==
        std::vector<std::string>{"2x16", "a_very_lon..._variant_12"});
  CHECK(keys.empty());
  CHECK(pareto_labels({}, &keys).empty());
}

TEST_CASE("pareto plot writes a scatter with a red front", "[train][pareto]") {
  const fs::path dir = fs::temp_directory_path() / ("dlt_test_pareto_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::vector<ParetoPoint> pts = {{"2x16", 1.2e5, 71.5}, {"2x32", 4.1e5, 78.2}, {"3x32", 6.0e5, 81.0},
                                        {"3x64", 2.2e6, 83.4}, {"4x64", 2.9e6, 82.1}, {"2x64", 1.5e6, 76.0},
                                        {"3x16", 2.0e5, 70.2}, {"4x128", 9.8e6, 84.0}};
  const fs::path p = dir / "pareto.png";
  write_pareto_png(p.string(), pts, "Sweep: accuracy versus memory");
  int w = 0, h = 0, n = 0;
  uint8_t* data = stbi_load(p.string().c_str(), &w, &h, &n, 3);
  REQUIRE(data != nullptr);
  CHECK(w == 900);
  CHECK(h == 650);
  int red = 0, blue = 0;
  for (int i = 0; i < w * h; ++i) {
    const uint8_t* q = data + i * 3;
    red += q[0] == 215 && q[1] == 25 && q[2] == 28;
    blue += q[0] == 0 && q[1] == 114 && q[2] == 189;
  }
  stbi_image_free(data);
  CHECK(red > 500);   // 5 front points joined by a thick line
  CHECK(blue > 100);  // the 3 dominated points
  CHECK_FALSE(fs::exists(p.string() + ".tmp"));

  const fs::path e = dir / "pareto_empty.png";
  write_pareto_png(e.string(), {}, "");
  CHECK(fs::file_size(e) > 1000);
  if (!std::getenv("DLT_KEEP_TEST_PLOTS")) fs::remove_all(dir);
}
