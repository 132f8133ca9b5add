// ResetInputNormalization (MATLAB's trainingOptions) in whole training runs on generated shapes:
// true (the default) computes the imageInput's statistics from the training data, over those the
// config gives (Min and Max, Mean and StandardDeviation) and over a base model's; false keeps
// those (and computes only missing ones). The statistics are read back from the written model.bin.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "data/batch_loader.h"
#include "data/data_test_util.h"
#include "data/shapes.h"
#include "support/tensor_utils.h"
#include "train/train_test_util.h"

using namespace dlt;

namespace {

std::string shapes(const std::string& dir, uint64_t seed) {
  ShapesDatasetOptions so;
  so.classes = 3;
  so.per_class = 20;
  so.height = so.width = 12;
  so.seed = seed;
  REQUIRE(write_shapes_dataset(dir, so) == 60);
  return dir;
}

// One epoch of `yaml` into dir/out: the input layer's states in model.bin.
std::vector<NamedTensor> train_states(const std::string& dir, const std::string& out, const std::string& yaml,
                                      std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), {"training.MaxEpochs=1", "training.MiniBatchSize=20"});
  return test::train_and_read_states(dir, out, yaml, "input", overrides);
}

const NamedTensor& state(const std::vector<NamedTensor>& s, const std::string& name) {
  return test::state_named(s, name);
}

std::string net(const std::string& input, const std::string& data) {
  return "layers:\n  - {type: imageInput, Name: input, InputSize: [12, 12, 3], " + input +
         "}\n"
         "  - {type: convolution2d, Name: conv, FilterSize: 3, NumFilters: 4}\n"
         "  - {type: relu, Name: relu}\n"
         "  - {type: globalAveragePooling2d, Name: gap}\n"
         "  - {type: fullyConnected, Name: fc, OutputSize: 3}\n"
         "  - {type: softmax, Name: sm}\n"
         "  - {type: classification, Name: out}\n"
         "data:\n  train: " +
         data + "/train\n";
}

}  // namespace

TEST_CASE("ResetInputNormalization: the config's Min and Max kept (false) or recomputed (true)", "[train]") {
  test::TempDir tmp;
  const std::string data = shapes(tmp.str() + "/data", 3);
  const std::string yaml = net("Normalization: rescale-zero-one, Min: 10, Max: [200, 210, 220]", data);
  const auto kept = train_states(tmp.str(), "kept", yaml, {"training.ResetInputNormalization=false"});
  CHECK(state(kept, "Min").data == std::vector<float>{10, 10, 10});
  CHECK(state(kept, "Max").data == std::vector<float>{200, 210, 220});
  // The default recomputes them: the training images' per-channel range.
  const auto reset = train_states(tmp.str(), "reset", yaml, {});
  LoaderOptions lo;
  lo.input = Shape{12, 12, 3};
  const DatasetStats st = compute_stats(ImageDatastore(data + "/train", DataOptions{}), lo);
  for (size_t c = 0; c < 3; ++c) {
    CHECK(state(reset, "Min").data[c] == static_cast<float>(st.channel_min[c]));
    CHECK(state(reset, "Max").data[c] == static_cast<float>(st.channel_max[c]));
  }
  CHECK(state(reset, "Max").data != state(kept, "Max").data);
}

TEST_CASE("ResetInputNormalization: the config's Mean and StandardDeviation kept (false)", "[train]") {
  test::TempDir tmp;
  const std::string data = shapes(tmp.str() + "/data", 3);
  const std::string yaml =
      net("Normalization: zscore, Mean: [123.675, 116.28, 103.53], StandardDeviation: [58.395, 57.12, 57.375]", data);
  const auto kept = train_states(tmp.str(), "kept", yaml, {"training.ResetInputNormalization=false"});
  CHECK(state(kept, "Mean").data == std::vector<float>{123.675f, 116.28f, 103.53f});
  CHECK(state(kept, "StandardDeviation").data == std::vector<float>{58.395f, 57.12f, 57.375f});
  const auto reset = train_states(tmp.str(), "reset", yaml, {});
  CHECK(state(reset, "Mean").data != state(kept, "Mean").data);
}

TEST_CASE("ResetInputNormalization: a base model's zscore statistics kept (false) or recomputed (true)", "[train]") {
  test::TempDir tmp;
  const std::string first = shapes(tmp.str() + "/first", 3), second = shapes(tmp.str() + "/second", 11);
  const auto base = train_states(tmp.str(), "base", net("Normalization: zscore", first), {});
  const std::string fine_tune = "base:\n  Model: " + tmp.str() +
                                "/base/model.bin\n  RemoveLast: 3\n"
                                "layers:\n"
                                "  - {type: fullyConnected, Name: fc2, OutputSize: 3}\n"
                                "  - {type: softmax, Name: sm2}\n"
                                "  - {type: classification, Name: out2}\n"
                                "data:\n  train: " +
                                second + "/train\n";
  const auto kept = train_states(tmp.str(), "kept", fine_tune, {"training.ResetInputNormalization=false"});
  CHECK(state(kept, "Mean").data == state(base, "Mean").data);
  CHECK(state(kept, "StandardDeviation").data == state(base, "StandardDeviation").data);
  const auto reset = train_states(tmp.str(), "reset", fine_tune, {});
  CHECK(state(reset, "Mean").data != state(base, "Mean").data);  // the second dataset's
  const auto again = train_states(tmp.str(), "again", net("Normalization: zscore", second), {});
  CHECK(state(reset, "Mean").data == state(again, "Mean").data);
}
