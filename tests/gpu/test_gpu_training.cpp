// (d) A short training run on generated shapes data, on the device and on the CPU from the
// same seed: both learn (well above chance) and land in the same accuracy band. (e) Model
// files cross devices: saved from a network on the device, loaded on the CPU (and the other
// way round), they give the same predictions.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "config/config.h"
#include "data/shapes.h"
#include "gpu/gpu_test_util.h"
#include "optim/optimizer.h"
#include "train/execution.h"
#include "train/trainer.h"

namespace dlt::test::gpu {

namespace {

// Class probabilities of x (host, (N, H, W, C)) under net in inference mode, on the host.
Tensor predict(Network& net, const Tensor& x) {
  net.set_batch(x.dim(0));
  RunContext eval{false, 0, 0};
  return net.forward(x.to(net.device()), eval).to(Device::cpu());
}

void check_same_predictions(const std::string& what, Network& a, Network& b, uint64_t seed) {
  Rng rng(seed);
  Tensor x = random_images(32, a.input_shape(), rng);
  Tensor pa = predict(a, x), pb = predict(b, x);
  Comparison c = compare_tensors(pa, pb);
  INFO(what << " (" << a.device().str() << " vs " << b.device().str() << "): " << c.str());
  CHECK(c.rel <= 1e-4);
  const int64_t k = pa.dim(pa.shape().rank() - 1);
  int64_t differ = 0;
  for (int64_t i = 0; i < 32; ++i) {
    const float* ra = pa.data() + i * k;
    const float* rb = pb.data() + i * k;
    int64_t ba = 0, bb = 0;
    for (int64_t j = 1; j < k; ++j) {
      if (ra[j] > ra[ba]) ba = j;
      if (rb[j] > rb[bb]) bb = j;
    }
    // a near-tie may flip within the tolerance; count only clear disagreements
    if (ba != bb && std::fabs(ra[ba] - ra[bb]) > 1e-4) ++differ;
  }
  CHECK(differ == 0);
}

// A network loaded from a model file onto device.
std::unique_ptr<Network> load_on(const std::string& path, Device device) {
  ModelData m = load_model(path);
  auto net = std::make_unique<Network>(m.network, device);
  net->load_weights(m);
  return net;
}

// A few sgdm steps on random data, so that weights and batch-norm statistics move away from
// their initial values on the network's own device.
void train_a_little(Network& net, const TrainingOptions& o, uint64_t seed) {
  Rng rng(seed);
  net.set_batch(16);
  Optimizer opt(o, net.params());
  Tensor x = random_images(16, net.input_shape(), rng).to(net.device());
  Tensor y = random_labels(16, net.num_classes(), rng).to(net.device());
  for (uint64_t it = 1; it <= 3; ++it) {
    RunContext ctx{true, seed, it};
    net.forward(x, ctx);
    net.loss_and_backward(y, ctx, true, nullptr);
    opt.step(1e-3);
  }
}

struct RunOutcome {
  double accuracy = 0;
  std::string model;
};

RunOutcome train_shapes(const std::string& data, const std::string& out, const std::string& env) {
  Config c = load_config(
      config_path("shapes"),
      {"data.train=" + data + "/train", "data.validation=" + data + "/test", "training.ExecutionEnvironment=" + env,
       "training.MaxEpochs=6", "training.Seed=5", "training.Verbose=false", "training.ValidationFrequency=1000"});
  TrainArgs args;
  args.output_dir = out;
  args.config_text = dump_config(c);
  args.device = resolve_device(c.training);
  TrainResult r = train_network(c, args);
  INFO(env << " run: status " << r.status << ", validation accuracy " << r.validation_accuracy << "%");
  CHECK(r.status == "completed");
  return {r.validation_accuracy, r.model_path};
}

}  // namespace

TEST_CASE("gpu training: shapes data reaches the CPU's accuracy band", "[gpu][train]") {
  TempDir tmp;
  ShapesDatasetOptions so;
  so.classes = 4;
  so.per_class = 400;
  so.seed = 3;
  REQUIRE(write_shapes_dataset(tmp.path() + "/data", so) == 1600);
  const std::string env = testing_a_gpu() ? "gpu" : "cpu";
  RunOutcome dev = train_shapes(tmp.path() + "/data", tmp.path() + "/run_dev", env);
  RunOutcome cpu = train_shapes(tmp.path() + "/data", tmp.path() + "/run_cpu", "cpu");
  INFO("validation accuracy: " << env << " " << dev.accuracy << "%, cpu " << cpu.accuracy << "%");
  // About 78% after 6 epochs on 1280 images (chance is 25%); rounding differences between the
  // devices change the trajectory, so the two runs agree only within a band.
  CHECK(cpu.accuracy >= 60.0);
  CHECK(dev.accuracy >= 60.0);
  CHECK(std::fabs(dev.accuracy - cpu.accuracy) <= 10.0);
  // The device run's model predicts the same on the CPU, and the CPU run's on the device.
  REQUIRE(std::filesystem::exists(dev.model));
  REQUIRE(std::filesystem::exists(cpu.model));
  auto a = load_on(dev.model, device_under_test()), b = load_on(dev.model, Device::cpu());
  check_same_predictions("model trained on " + env, *a, *b, 21);
  auto c = load_on(cpu.model, device_under_test()), d = load_on(cpu.model, Device::cpu());
  check_same_predictions("model trained on cpu", *c, *d, 22);
}

TEST_CASE("gpu model files: saved on the device, loaded on the CPU, and the other way round", "[gpu][model]") {
  TempDir tmp;
  Config c = load_config(config_path("cifar10-bn"));
  SECTION("device -> cpu") {
    Network dev(c.network, device_under_test());
    dev.init_params(7);
    train_a_little(dev, c.training, 7);
    save_model(tmp.path() + "/dev.bin", dev.to_model_data());
    auto cpu = load_on(tmp.path() + "/dev.bin", Device::cpu());
    check_same_predictions("saved on the device", dev, *cpu, 31);
    // and the file holds exactly the device's values
    ModelData m = load_model(tmp.path() + "/dev.bin"), live = dev.to_model_data();
    REQUIRE(m.params.size() == live.params.size());
    for (size_t i = 0; i < m.params.size(); ++i) CHECK(m.params[i].data == live.params[i].data);
    for (size_t i = 0; i < m.states.size(); ++i) CHECK(m.states[i].data == live.states[i].data);
  }
  SECTION("cpu -> device") {
    Network cpu(c.network, Device::cpu());
    cpu.init_params(8);
    train_a_little(cpu, c.training, 8);
    save_model(tmp.path() + "/cpu.bin", cpu.to_model_data());
    auto dev = load_on(tmp.path() + "/cpu.bin", device_under_test());
    check_same_predictions("saved on the cpu", *dev, cpu, 32);
    // a round trip through the device changes no bit
    save_model(tmp.path() + "/again.bin", dev->to_model_data());
    ModelData a = load_model(tmp.path() + "/cpu.bin"), b = load_model(tmp.path() + "/again.bin");
    for (size_t i = 0; i < a.params.size(); ++i) CHECK(a.params[i].data == b.params[i].data);
  }
}

}  // namespace dlt::test::gpu
