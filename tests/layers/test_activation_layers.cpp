// The activation layers against PyTorch: forward values and input gradients (dy = 1) at fixed
// inputs, kinks included, as Debian's torch 1.13 computes them (the expression per row;
// x.requires_grad_(), m(x).sum().backward(), x.grad), and their option errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "layers/layer.h"
#include "support/grad_check.h"

using namespace dlt;
using namespace dlt::test;

namespace {

const std::vector<float> kX = {-7.0f, -4.0f, -3.0f, -2.5f, -1.0f, -0.25f, 0.0f,
                               0.5f,  1.0f,  2.5f,  3.0f,  4.0f,  6.0f,   7.5f};

struct TorchRow {
  std::string type, option, torch;  // dltrain's layer, its option, the torch module
  std::vector<float> y, dx;         // m(x), x.grad of m(x).sum()
};

// /usr/bin/python3 with torch 1.13.0, float32.
const std::vector<TorchRow> kTorch = {
    {"clippedRelu",
     "Ceiling=6",
     "nn.ReLU6()",
     {0, 0, 0, 0, 0, 0, 0, 0.5, 1, 2.5, 3, 4, 6, 6},
     {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0}},
    {"clippedRelu",
     "Ceiling=2.5",
     "nn.Hardtanh(0, 2.5)",
     {0, 0, 0, 0, 0, 0, 0, 0.5, 1, 2.5, 2.5, 2.5, 2.5, 2.5},
     {0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0}},
    {"sigmoid",
     "",
     "nn.Sigmoid()",
     {0.000911051175, 0.0179862101, 0.0474258736, 0.0758581758, 0.268941432, 0.437823504, 0.5, 0.622459352, 0.731058598,
      0.924141824, 0.952574134, 0.982013762, 0.997527421, 0.999447167},
     {0.000910221133, 0.0176627059, 0.0451766588, 0.0701037124, 0.196611941, 0.246134073, 0.25, 0.23500371, 0.196611926,
      0.0701037124, 0.0451766551, 0.0176627338, 0.00246646581, 0.000552527432}},
    {"tanh",
     "",
     "nn.Tanh()",
     {-0.999998331, -0.999329329, -0.995054781, -0.986614287, -0.761594176, -0.244918659, 0, 0.462117165, 0.761594176,
      0.986614287, 0.995054781, 0.999329329, 0.999987721, 0.999999404},
     {3.33785738e-06, 0.0013408931, 0.00986598153, 0.0265922491, 0.419974297, 0.940014839, 1, 0.786447704, 0.419974297,
      0.0265922491, 0.00986598153, 0.0013408931, 2.45569627e-05, 1.19209255e-06}},
    {"swish",
     "",
     "nn.SiLU()",
     {-0.00637735846, -0.0719448403, -0.142277613, -0.189645454, -0.268941432, -0.109455876, 0, 0.311229676,
      0.731058598, 2.31035447, 2.85772252, 3.92805505, 5.98516464, 7.4958539},
     {-0.00546049699, -0.0526646115, -0.0881041065, -0.0994011089, 0.0723294839, 0.376289994, 0.5, 0.739961207,
      0.927670538, 1.09940112, 1.08810413, 1.05266464, 1.01232624, 1.00359106}},
    {"gelu",
     "",
     "nn.GELU()",
     {0, -0.000126719475, -0.00404986739, -0.0155241787, -0.158655286, -0.100323431, 0, 0.345731199, 0.841344714,
      2.48447585, 2.99595022, 3.99987316, 6, 7.5},
     {0, -0.000503629446, -0.0119456053, -0.0376110673, -0.0833154321, 0.304626703, 0.5, 0.86749506, 1.08331537,
      1.03761101, 1.01194561, 1.00050366, 1, 1}},
    {"gelu",
     "Approximation=tanh",
     "nn.GELU(approximate='tanh')",
     {-0, -7.02142715e-05, -0.00363743305, -0.0150842965, -0.158807993, -0.100324646, 0, 0.345714003, 0.841192007,
      2.48491573, 2.99636269, 3.9999299, 6, 7.5},
     {0, -0.000334972079, -0.0115842968, -0.037951652, -0.0829640925, 0.304645896, 0.5, 0.86736989, 1.08296406,
      1.03795171, 1.01158428, 1.00033498, 1, 1}},
    {"hardSigmoid",
     "",
     "nn.Hardsigmoid()",
     {0, 0, 0, 0.0833333358, 0.333333343, 0.458333343, 0.5, 0.583333313, 0.666666687, 0.916666687, 1, 1, 1, 1},
     {0, 0, 0, 0.166666672, 0.166666672, 0.166666672, 0.166666672, 0.166666672, 0.166666672, 0.166666672, 0, 0, 0, 0}},
    {"hardSwish",
     "",
     "nn.Hardswish()",
     {-0, -0, -0, -0.208333328, -0.333333343, -0.114583336, 0, 0.291666657, 0.666666687, 2.29166675, 3, 4, 6, 7.5},
     {0, 0, -0.5, -0.333333313, 0.166666657, 0.416666657, 0.5, 0.666666687, 0.833333373, 1.33333325, 1.5, 1, 1, 1}},
};

// The layer's output and input gradient (dy = 1) at kX on the CPU backend.
void run_layer(const TorchRow& row, std::vector<float>& y, std::vector<float>& dx) {
  std::vector<std::string> opts;
  if (!row.option.empty()) opts.push_back(row.option);
  auto layer = make_layer(layer_spec(row.type, opts));
  const int64_t n = static_cast<int64_t>(kX.size());
  REQUIRE(layer->infer({Shape{1, 1, n}}) == Shape{1, 1, n});
  layer->setup(1, backend_for(Device::cpu()));
  Tensor tx(Shape{1, 1, 1, n}), ty(Shape{1, 1, 1, n}), tdy(Shape{1, 1, 1, n}), tdx(Shape{1, 1, 1, n});
  for (int64_t i = 0; i < n; ++i) tx.data()[i] = kX[static_cast<size_t>(i)], tdy.data()[i] = 1.f;
  RunContext ctx{true, 1, 0};
  layer->forward({&tx}, ty, ctx);
  std::vector<Tensor*> dxs{&tdx};
  layer->backward({&tx}, ty, tdy, dxs, ctx);
  y.assign(ty.data(), ty.data() + n);
  dx.assign(tdx.data(), tdx.data() + n);
}

}  // namespace

TEST_CASE("activation layers equal PyTorch's functions and gradients, kinks included", "[layers][act]") {
  for (const TorchRow& row : kTorch) {
    std::vector<float> y, dx;
    run_layer(row, y, dx);
    for (size_t i = 0; i < kX.size(); ++i) {
      INFO(row.type << " " << row.option << " (torch " << row.torch << ") at x = " << kX[i]);
      CHECK(std::fabs(y[i] - row.y[i]) <= 1e-6 + 2e-6 * std::fabs(row.y[i]));
      CHECK(std::fabs(dx[i] - row.dx[i]) <= 1e-6 + 2e-6 * std::fabs(row.dx[i]));
    }
  }
}

TEST_CASE("activation layers: options and their errors", "[layers][act]") {
  auto make = [](const std::string& type, std::vector<std::string> opts) {
    return make_layer(layer_spec(type, std::move(opts)));
  };
  for (const char* type : {"clippedRelu", "sigmoid", "tanh", "swish", "gelu", "hardSigmoid", "hardSwish"}) {
    std::vector<std::string> opts;
    if (std::string(type) == "clippedRelu") opts = {"Ceiling=6"};
    auto l = make(type, opts);
    CHECK(l->role() == Layer::Role::kHidden);
    CHECK_FALSE(l->fusion_traits().relu);
    CHECK(l->params().empty());
    CHECK(l->infer({Shape{3, 5, 7}}) == Shape{3, 5, 7});
  }
  CHECK_THROWS_WITH(make("clippedRelu", {}),
                    Catch::Contains("layer 'layer' (clippedRelu): option Ceiling is required (e.g. Ceiling: 6)"));
  CHECK_THROWS_WITH(make("clippedRelu", {"Ceiling=0"}), Catch::Contains("option Ceiling must be > 0, got 0"));
  CHECK_THROWS_WITH(make("clippedRelu", {"Ceiling=-2"}), Catch::Contains("option Ceiling must be > 0, got -2"));
  CHECK_THROWS_WITH(make("clippedRelu", {"Ceiling=[1,2]"}), Catch::Contains("Ceiling"));
  CHECK_THROWS_WITH(make("gelu", {"Approximation=erf"}),
                    Catch::Contains("layer 'layer' (gelu): option Approximation") && Catch::Contains("none, tanh"));
  CHECK_THROWS_WITH(make("hardSigmoid", {"Alpha=1e300"}),
                    Catch::Contains("(hardSigmoid): option Alpha must be a finite number"));
  CHECK_THROWS_WITH(make("hardSigmoid", {"Beta=abc"}), Catch::Contains("Beta"));
  CHECK_NOTHROW(make("gelu", {"Approximation=TANH"}));
  CHECK_NOTHROW(make("gelu", {"Approximation=none"}));
  CHECK_NOTHROW(make("hardSigmoid", {"Alpha=0.2", "Beta=0.5"}));
}
