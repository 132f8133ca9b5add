// A per-pixel (pixelClassification) model with fixed weights: its forward pass by hand, its
// model file round trip, and (hidden, for tests/cli/segment.sh) writing it where
// DLT_SEG_MODEL says.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "config/config.h"
#include "net/model_file.h"
#include "net/network.h"

using namespace dlt;

namespace {

// 12x16 RGB in, a 1x1 convolution with 3 filters, softmax, pixelClassification. Class scores
// are 0.05 x (G, R, B): background (green) / red / blue, whichever channel is largest.
ModelData seg_model() {
  const std::string text = R"(layers:
  - {type: imageInput, Name: input, InputSize: [12, 16, 3], Normalization: none}
  - {type: convolution2d, Name: conv, FilterSize: 1, NumFilters: 3}
  - {type: softmax, Name: softmax}
  - {type: pixelClassification, Name: labels}
training:
  MiniBatchSize: 4
)";
  Config c = load_config_text(text, "seg_model.yaml");
  Network net(c.network, Device::cpu());
  net.init_params(1);
  net.classes() = {"background", "red", "blue"};
  ModelData m = net.to_model_data();
  bool set = false;
  for (auto& p : m.params) {
    if (p.layer != "conv") continue;
    if (p.shape.rank() == 4) {  // (K, kh, kw, C)
      REQUIRE(p.shape.numel() == 9);
      const int channel_of_class[3] = {1, 0, 2};  // G, R, B
      for (int k = 0; k < 3; ++k)
        for (int ch = 0; ch < 3; ++ch) p.data[size_t(k * 3 + ch)] = ch == channel_of_class[k] ? 0.05f : 0.f;
      set = true;
    } else {
      for (float& v : p.data) v = 0;
    }
  }
  REQUIRE(set);
  m.training_yaml = dump_config(c);
  m.metadata_json = "{\"kind\":\"model\",\"status\":\"test fixture\"}";
  return m;
}

}  // namespace

TEST_CASE("per-pixel model with fixed weights: forward by hand and model file round trip", "[seg_model]") {
  ModelData m = seg_model();
  const std::string path = (std::filesystem::temp_directory_path() / "dlt_seg_model_test.bin").string();
  save_model(path, m);
  ModelData back = load_model(path);
  std::filesystem::remove(path);
  Network net(back.network, Device::cpu());
  net.load_weights(back);
  REQUIRE(net.per_pixel());
  REQUIRE(net.classes() == std::vector<std::string>{"background", "red", "blue"});
  net.set_batch(1);
  Tensor x(Shape{1, 12, 16, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = 0;
  // Pixel (0, 0) pure red 100: scores (0, 5, 0) -> p = e^5 / (e^5 + 2).
  x.data()[0] = 100;
  // Pixel (0, 1) blue 40, green 20: scores (1, 0, 2).
  x.data()[3 + 1] = 20;
  x.data()[3 + 2] = 40;
  RunContext ctx;
  const Tensor& p = net.forward(x, ctx);
  REQUIRE(p.shape() == Shape{1, 12, 16, 3});
  const double e5 = std::exp(5.0);
  CHECK(p.data()[1] == Approx(e5 / (e5 + 2)).epsilon(1e-5));
  CHECK(p.data()[0] == Approx(1 / (e5 + 2)).epsilon(1e-5));
  const double z = std::exp(1.0) + 1 + std::exp(2.0);
  CHECK(p.data()[3 + 2] == Approx(std::exp(2.0) / z).epsilon(1e-5));
  CHECK(p.data()[3 + 0] == Approx(std::exp(1.0) / z).epsilon(1e-5));
  // An all-zero pixel: three equal scores, 1/3 each.
  CHECK(p.data()[6] == Approx(1.0 / 3).epsilon(1e-5));
}

TEST_CASE("write the fixed per-pixel model for tests/cli/segment.sh", "[.][make_seg_model]") {
  const char* path = std::getenv("DLT_SEG_MODEL");
  REQUIRE(path != nullptr);
  save_model(path, seg_model());
  // An image classifier too, which segment must refuse.
  if (const char* cls = std::getenv("DLT_CLASS_MODEL")) {
    Config c = load_config_text(R"(layers:
  - {type: imageInput, Name: input, InputSize: [12, 16, 3], Normalization: none}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: softmax}
  - {type: classification}
)",
                                "class_model.yaml");
    Network net(c.network, Device::cpu());
    net.init_params(1);
    net.classes() = {"no", "yes"};
    save_model(cls, net.to_model_data());
  }
}
