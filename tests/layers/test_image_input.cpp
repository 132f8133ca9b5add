// imageInput's normalizations on the CPU against the formulas MATLAB's imageInputLayer documents:
// rescale-zero-one (x - Min) / (Max - Min) and rescale-symmetric 2 (x - Min) / (Max - Min) - 1,
// per channel, with Min and Max from the training data's statistics or from the config; zscore;
// the option errors.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "layers/io_layers.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"
#include "util/error.h"
#include "util/rng.h"

using namespace dlt;
using namespace dlt::test;

namespace {

// The layer's output for 2 images of 2x1 pixels of 3 channels, x[n, p, c] = 10 n + 40 p + 100 c,
// after set_statistics with these per-channel Min and Max (and Mean / StandardDeviation).
Vec normalize(const LayerSpec& spec, const Vec& lo, const Vec& hi, bool statistics = true) {
  Backend& be = backend_for(Device::cpu());
  std::unique_ptr<Layer> l = make_layer(spec);
  auto& in = dynamic_cast<ImageInputLayer&>(*l);
  REQUIRE(in.infer({}) == Shape{2, 1, 3});
  for (State& st : in.states()) st.value = Tensor(st.shape);  // the network allocates them
  Rng rng(1);
  in.init_params(rng);
  in.setup(2, be);
  if (statistics) {
    const Shape c{3};
    in.set_statistics(Tensor(Shape{2, 1, 3}), to_tensor(lo, c), to_tensor(hi, c), to_tensor(lo, c), to_tensor(hi, c));
  }
  Vec x;
  for (int n = 0; n < 2; ++n)
    for (int p = 0; p < 2; ++p)
      for (int c = 0; c < 3; ++c) x.push_back(10 * n + 40 * p + 100 * c);
  const Tensor tx = to_tensor(x, Shape{2, 2, 1, 3});
  Tensor y(tx.shape());
  in.forward({&tx}, y, RunContext{});
  return to_vec(y);
}

double at(int n, int p, int c) { return 10 * n + 40 * p + 100 * c; }

}  // namespace

TEST_CASE("imageInput rescale-zero-one and rescale-symmetric: MATLAB's formulas per channel", "[layers]") {
  const Vec lo{0, 90, 150}, hi{50, 140, 350};  // channel 2's range is 200
  const Vec zero_one =
      normalize(layer_spec("imageInput", {"InputSize=[2,1,3]", "Normalization=rescale-zero-one"}), lo, hi);
  const Vec symmetric =
      normalize(layer_spec("imageInput", {"InputSize=[2,1,3]", "Normalization=rescale-symmetric"}), lo, hi);
  for (int n = 0; n < 2; ++n)
    for (int p = 0; p < 2; ++p)
      for (int c = 0; c < 3; ++c) {
        const size_t k = static_cast<size_t>((n * 2 + p) * 3 + c);
        const double u = (at(n, p, c) - lo[c]) / (hi[c] - lo[c]);
        CHECK(zero_one[k] == Approx(u).margin(1e-6));
        CHECK(symmetric[k] == Approx(2 * u - 1).margin(1e-6));
      }
}

// The config's Min and Max are the states from init_params on (training keeps them with
// ResetInputNormalization false: tests/train/test_input_normalization.cpp); set_statistics, what
// training calls otherwise, replaces them.
TEST_CASE("imageInput rescale: Min and Max from the config; statistics replace them", "[layers]") {
  const LayerSpec given =
      layer_spec("imageInput", {"InputSize=[2,1,3]", "Normalization=rescale-zero-one", "Min=0", "Max=255"});
  const Vec y = normalize(given, {}, {}, false);
  for (size_t k = 0; k < y.size(); ++k) {
    const int c = static_cast<int>(k % 3), p = static_cast<int>(k / 3 % 2), n = static_cast<int>(k / 6);
    CHECK(y[k] == Approx(at(n, p, c) / 255).margin(1e-6));
  }
  const Vec replaced = normalize(given, {0, 0, 0}, {100, 100, 100});
  CHECK(replaced[3] == Approx(at(0, 1, 0) / 100).margin(1e-6));
  const Vec per_channel = normalize(layer_spec("imageInput", {"InputSize=[2,1,3]", "Normalization=rescale-symmetric",
                                                              "Min=[0,100,200]", "Max=[100,200,300]"}),
                                    {}, {}, false);
  for (size_t k = 0; k < per_channel.size(); ++k) {
    const int c = static_cast<int>(k % 3), p = static_cast<int>(k / 3 % 2), n = static_cast<int>(k / 6);
    CHECK(per_channel[k] == Approx(2 * (at(n, p, c) - 100 * c) / 100 - 1).margin(1e-6));
  }
  CHECK(dynamic_cast<ImageInputLayer&>(*make_layer(given)).given_statistics());
  CHECK_FALSE(dynamic_cast<ImageInputLayer&>(
                  *make_layer(layer_spec("imageInput", {"InputSize=[2,1,3]", "Normalization=rescale-zero-one"})))
                  .given_statistics());
}

// MATLAB's imageInputLayer Mean and StandardDeviation given in the config (ImageNet's, say):
// per channel or one value, zerocenter's Mean repeated over the mean image.
TEST_CASE("imageInput zscore and zerocenter: Mean and StandardDeviation from the config", "[layers]") {
  const Vec y = normalize(layer_spec("imageInput", {"InputSize=[2,1,3]", "Normalization=zscore", "Mean=[10,100,250]",
                                                    "StandardDeviation=[20,50,100]"}),
                          {}, {}, false);
  const Vec mean{10, 100, 250}, sd{20, 50, 100};
  for (size_t k = 0; k < y.size(); ++k) {
    const int c = static_cast<int>(k % 3), p = static_cast<int>(k / 3 % 2), n = static_cast<int>(k / 6);
    CHECK(y[k] == Approx((at(n, p, c) - mean[c]) / sd[c]).margin(1e-6));
  }
  const Vec z =
      normalize(layer_spec("imageInput", {"InputSize=[2,1,3]", "Normalization=zerocenter", "Mean=30"}), {}, {}, false);
  for (size_t k = 0; k < z.size(); ++k) {
    const int c = static_cast<int>(k % 3), p = static_cast<int>(k / 3 % 2), n = static_cast<int>(k / 6);
    CHECK(z[k] == Approx(at(n, p, c) - 30).margin(1e-6));
  }
}

TEST_CASE("imageInput zscore: (x - Mean) / StandardDeviation per channel", "[layers]") {
  const Vec mean{10, 100, 250}, sd{20, 50, 100};
  const Vec y = normalize(layer_spec("imageInput", {"InputSize=[2,1,3]", "Normalization=zscore"}), mean, sd);
  for (size_t k = 0; k < y.size(); ++k) {
    const int c = static_cast<int>(k % 3), p = static_cast<int>(k / 3 % 2), n = static_cast<int>(k / 6);
    CHECK(y[k] == Approx((at(n, p, c) - mean[c]) / sd[c]).margin(1e-6));
  }
}

TEST_CASE("imageInput Min and Max: errors name the option", "[layers]") {
  auto error = [](std::vector<std::string> opts) {
    opts.insert(opts.begin(), "InputSize=[2,1,3]");
    try {
      make_layer(layer_spec("imageInput", opts));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error({"Normalization=zscore", "Min=0", "Max=1"}),
             Catch::Contains("option Min applies to Normalization rescale-symmetric or rescale-zero-one, not zscore"));
  CHECK_THAT(error({"Normalization=zerocenter", "StandardDeviation=2"}),
             Catch::Contains("option StandardDeviation applies to Normalization zscore, not zerocenter"));
  CHECK_THAT(error({"Normalization=none", "Mean=2"}),
             Catch::Contains("option Mean applies to Normalization zerocenter or zscore, not none"));
  CHECK_THAT(error({"Normalization=rescale-zero-one", "Min=0"}), Catch::Contains("give both Min and Max"));
  CHECK_THAT(error({"Normalization=zscore", "StandardDeviation=3"}),
             Catch::Contains("give both Mean and StandardDeviation"));
  CHECK_THAT(error({"Normalization=rescale-zero-one", "Min=[0,1]", "Max=255"}),
             Catch::Contains("option Min takes one value or one per channel (3), got 2"));
  CHECK_THAT(error({"Normalization=zscore", "Mean=0", "StandardDeviation=[1,0,1]"}),
             Catch::Contains("StandardDeviation must be > 0 (channel 2)"));
  CHECK_THAT(error({"Normalization=rescale-symmetric", "Min=[0,5,0]", "Max=[1,5,1]"}),
             Catch::Contains("Min must be below Max (channel 2)"));
  CHECK_THAT(error({"Normalization=rescale"}), Catch::Contains("rescale-symmetric"));
}
