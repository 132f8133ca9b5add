// Regression and multi-label model files with fixed weights for tests/cli/predict.sh: a 4x4
// grey image through fullyConnected (2 outputs) and a sigmoid, whose output for a uniform image
// of value v is (sigmoid(v / 100), 1 - sigmoid(v / 100)), ending in a regression layer
// (responses Angle and Scale, normalised) or multilabelClassification (classes cat and dog).
// The hidden case writes them where DLT_REGRESSION_MODEL and DLT_MULTILABEL_MODEL say.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>

#include "config/config.h"
#include "net/model_file.h"
#include "net/network.h"
#include "util/error.h"

using namespace dlt;

namespace {

ModelData two_output_model(const std::string& output) {
  Config c = load_config_text(R"(layers:
  - {type: imageInput, Name: input, InputSize: [4, 4, 1], Normalization: none}
  - {type: fullyConnected, Name: fc, OutputSize: 2}
  - {type: sigmoid}
  - {type: )" + output + R"(}
)",
                              "task_model.yaml");
  Network net(c.network, Device::cpu());
  net.init_params(1);
  ModelData m = net.to_model_data();
  for (auto& p : m.params) {
    if (p.layer != "fc") continue;
    // Weights (2, 16) or the bias: output 0 is the pixel sum / 1600 = v / 100, output 1 minus that.
    for (size_t i = 0; i < p.data.size(); ++i)
      p.data[i] = p.shape.numel() != 32 ? 0.f : i < 16 ? 1.f / 1600 : -1.f / 1600;
  }
  return m;
}

ModelData regression_model() {
  ModelData m = two_output_model("regression");
  REQUIRE(m.task == "regression");
  m.responses.names = {"Angle", "Scale"};
  m.responses.mean = {10.f, -1.f};
  m.responses.std = {2.f, 0.5f};
  return m;
}

ModelData multilabel_model() {
  ModelData m = two_output_model("multilabelClassification");
  REQUIRE(m.task == "multilabel");
  m.classes = {"cat", "dog"};
  return m;
}

}  // namespace

TEST_CASE("task models: output sigmoid(v / 100) for a uniform image v", "[task_models]") {
  for (const ModelData& m : {regression_model(), multilabel_model()}) {
    const ModelData back = decode_model(encode_model(m), "task.bin");
    CHECK(back.task == m.task);
    CHECK(back.responses.names == m.responses.names);
    Network net(back, Device::cpu());
    net.set_batch(2);
    Tensor x(Shape{2, 4, 4, 1});
    for (int64_t i = 0; i < 16; ++i) {
      x.data()[i] = 50;
      x.data()[16 + i] = 200;
    }
    RunContext ctx;
    const Tensor& y = net.forward(x, ctx);
    const double p50 = 1 / (1 + std::exp(-0.5)), p200 = 1 / (1 + std::exp(-2.0));
    CHECK(y.data()[0] == Approx(p50).epsilon(1e-5));
    CHECK(y.data()[1] == Approx(1 - p50).epsilon(1e-5));
    CHECK(y.data()[2] == Approx(p200).epsilon(1e-5));
  }
}

TEST_CASE("a model whose task is not its output layer's is refused", "[task_models]") {
  ModelData m = regression_model();
  m.task = "multilabel";
  CHECK_THROWS_WITH(Network(m, Device::cpu(), "lying.bin"),
                    Catch::Contains("lying.bin") && Catch::Contains("multilabel") && Catch::Contains("regression"));
}

TEST_CASE("write the task models for tests/cli/predict.sh", "[.][make_task_models]") {
  const char* reg = std::getenv("DLT_REGRESSION_MODEL");
  const char* multi = std::getenv("DLT_MULTILABEL_MODEL");
  REQUIRE(reg != nullptr);
  REQUIRE(multi != nullptr);
  save_model(reg, regression_model());
  save_model(multi, multilabel_model());
}
