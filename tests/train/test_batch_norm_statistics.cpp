// BatchNormalizationStatistics (MATLAB's trainingOptions): population replaces batch norm's moving
// averages by its input's mean and unbiased variance over one more pass of the training data.
// The layer's merge of batches against a direct computation, and a whole run whose first batch
// norm reads the raw pixels: its statistics in model.bin are the training images' per-channel
// mean and variance (compute_stats).
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "data/batch_loader.h"
#include "data/data_test_util.h"
#include "data/shapes.h"
#include "layers/layer.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"
#include "train/train_test_util.h"
#include "util/rng.h"

using namespace dlt;
using namespace dlt::test;

TEST_CASE("batch norm population statistics: batches of several sizes merged exactly", "[train][layers]") {
  Backend& be = backend_for(Device::cpu());
  std::unique_ptr<Layer> l = make_layer(layer_spec("batchNormalization", {}));
  REQUIRE(l->infer({Shape{2, 3, 3}}) == Shape{2, 3, 3});
  for (Param& p : l->params()) {
    p.value = Tensor(p.shape);
    p.grad = Tensor(p.shape);
  }
  for (State& s : l->states()) s.value = Tensor(s.shape);
  Rng rng(5);
  l->init_params(rng);
  std::vector<double> all;  // every value of the pass, (positions, 3)
  l->setup(4, be);
  REQUIRE(l->has_population_statistics());
  l->start_population_statistics();
  uint64_t it = 0;
  for (int64_t n : {4, 4, 1, 3}) {
    l->setup(n, be);
    const Vec x = random_vec(n * 2 * 3 * 3, rng, -2.0 + static_cast<double>(it), 3.0 + static_cast<double>(it));
    all.insert(all.end(), x.begin(), x.end());
    const Tensor tx = to_tensor(x, Shape{n, 2, 3, 3});
    Tensor y(tx.shape());
    RunContext ctx{true, 1, ++it};
    ctx.population_statistics = true;
    l->forward({&tx}, y, ctx);
  }
  // The moving averages are left alone during the pass (their initial 0 and 1).
  CHECK(to_vec(l->states()[0].value) == Vec{0, 0, 0});
  CHECK(to_vec(l->states()[1].value) == Vec{1, 1, 1});
  l->finish_population_statistics();
  const Vec mean = to_vec(l->states()[0].value), var = to_vec(l->states()[1].value);
  const double m = static_cast<double>(all.size() / 3);
  for (size_t c = 0; c < 3; ++c) {
    double s = 0, ss = 0;
    for (size_t i = c; i < all.size(); i += 3) s += all[i];
    const double mu = s / m;
    for (size_t i = c; i < all.size(); i += 3) ss += (all[i] - mu) * (all[i] - mu);
    CHECK(mean[c] == Approx(mu).epsilon(1e-5));
    CHECK(var[c] == Approx(ss / (m - 1)).epsilon(1e-5));
  }
}

namespace {

// One training run on 12x12 shapes whose first layer after the (unnormalized) input is a batch
// norm; returns that batch norm's TrainedMean and TrainedVariance from model.bin.
std::pair<std::vector<float>, std::vector<float>> first_bn(const std::string& dir, const std::string& out,
                                                           const std::string& statistics) {
  const std::string yaml =
      "layers:\n"
      "  - {type: imageInput, Name: input, InputSize: [12, 12, 3], Normalization: none}\n"
      "  - {type: batchNormalization, Name: bn0}\n"
      "  - {type: convolution2d, Name: conv, FilterSize: 3, NumFilters: 4}\n"
      "  - {type: batchNormalization, Name: bn1}\n"
      "  - {type: relu, Name: relu}\n"
      "  - {type: globalAveragePooling2d, Name: gap}\n"
      "  - {type: fullyConnected, Name: fc, OutputSize: 3}\n"
      "  - {type: softmax, Name: sm}\n"
      "  - {type: classification, Name: out}\n"
      "data:\n  train: " +
      dir + "/data/train\n  validation: " + dir + "/data/test\n";
  const auto states = train_and_read_states(
      dir, out, yaml, "bn0",
      {"training.MaxEpochs=2", "training.MiniBatchSize=16", "training.BatchNormalizationStatistics=" + statistics});
  const std::vector<float> mean = state_named(states, "TrainedMean").data,
                           var = state_named(states, "TrainedVariance").data;
  REQUIRE(mean.size() == 3);
  REQUIRE(var.size() == 3);
  return {mean, var};
}

}  // namespace

TEST_CASE("BatchNormalizationStatistics population: model.bin holds the training data's statistics", "[train]") {
  TempDir tmp;
  ShapesDatasetOptions so;
  so.classes = 3;
  so.per_class = 30;
  so.height = so.width = 12;
  so.seed = 4;
  REQUIRE(write_shapes_dataset(tmp.str() + "/data", so) == 90);
  LoaderOptions lo;
  lo.input = Shape{12, 12, 3};
  const DatasetStats st = compute_stats(ImageDatastore(tmp.str() + "/data/train", DataOptions{}), lo);
  const double m = static_cast<double>(st.count) * 144;  // positions per channel
  const auto population = first_bn(tmp.str(), "population", "population");
  for (size_t c = 0; c < 3; ++c) {
    CHECK(population.first[c] == Approx(st.channel_mean[c]).epsilon(1e-5));
    const double sd = st.channel_std[c];
    CHECK(population.second[c] == Approx(sd * sd * m / (m - 1)).epsilon(1e-4));
  }
  // The moving averages after 2 epochs of 5 batches (decay 0.1) are still far from them.
  const auto moving = first_bn(tmp.str(), "moving", "moving");
  CHECK(std::abs(moving.first[0] - population.first[0]) > 1.0);
}
