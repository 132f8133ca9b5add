// Helpers of the GPU test binary (gpu_test_util.h).
#include "gpu/gpu_test_util.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "config/config.h"
#include "util/error.h"

namespace dlt::test::gpu {

TensorPair random_pair(const Shape& shape, Rng& rng, float lo, float hi) {
  Tensor host = random_tensor(shape, rng, lo, hi);
  return {host, host.to(device_under_test())};
}

Comparison compare_tensors(const Tensor& got, const Tensor& want) { return compare(to_vec(got), to_vec(want)); }

std::string config_path(const std::string& name) {
  const std::string file = "/configs/" + name + ".yaml";
  if (const char* env = std::getenv("DLT_SOURCE_DIR"); env && *env) return env + file;
  if (std::filesystem::exists(DLT_SOURCE_DIR + file)) return DLT_SOURCE_DIR + file;
  return "." + file;
}

NetworkSpec config_network(const std::string& name) { return load_config(config_path(name)).network; }

NetworkSpec config_network_file(const std::string& relative) {
  std::string root = DLT_SOURCE_DIR;
  if (const char* env = std::getenv("DLT_SOURCE_DIR"); env && *env) root = env;
  const std::string path = root + "/" + relative;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return network_spec_from_yaml(text.str(), path);
}

namespace {

// The layer of learnable i of net.params() and the learnable's index within it; {size, 0}
// when there is none.
std::pair<size_t, size_t> layer_of_param(Network& net, size_t i) {
  size_t at = 0;
  for (size_t l = 0; l < net.size(); ++l) {
    const size_t count = net.layer(l).params().size();
    if (i < at + count) return {l, i - at};
    at += count;
  }
  return {net.size(), 0};
}

}  // namespace

bool feeds_batch_norm(Network& net, size_t i) {
  const auto [l, k] = layer_of_param(net, i);
  if (l == net.size()) return false;
  const std::vector<Param>& ps = net.layer(l).params();
  if (ps[k].name != "Bias" || k == 0 || ps[k - 1].name != "Weights") return false;
  // Read by the next layer, a batchNormalization, and by no other (a layer without Inputs reads
  // the one before it).
  const std::string& name = net.layer(l).name();
  for (size_t r = l + 1; r < net.size(); ++r) {
    const std::vector<std::string>& in = net.layer(r).spec().inputs;
    const bool reads = std::find(in.begin(), in.end(), name) != in.end() || (r == l + 1 && in.empty());
    if (reads && !(r == l + 1 && net.layer(r).type() == "batchNormalization")) return false;
  }
  return l + 1 < net.size() && net.layer(l + 1).type() == "batchNormalization";
}

bool zero_key_bias(Network& net, size_t i) {
  const auto [l, k] = layer_of_param(net, i);
  if (l == net.size()) return false;
  const std::vector<Param>& ps = net.layer(l).params();
  const bool cosine = std::any_of(ps.begin(), ps.end(), [](const Param& p) { return p.name == "LogitScale"; });
  // A rotary embedding turns the bias by each key's angles: no longer the same for every key.
  const std::vector<State>& st = net.layer(l).states();
  const bool rotary = std::any_of(st.begin(), st.end(), [](const State& s) { return s.name == "RotaryCos"; });
  return ps[k].name == "KeyBias" && !cosine && !rotary;
}

NetworkPair network_pair(const NetworkSpec& spec, uint64_t seed, const BackendOptions& dev_options) {
  NetworkPair p;
  p.cpu = std::make_unique<Network>(spec, Device::cpu());
  p.cpu->init_params(seed);
  ModelData m = p.cpu->to_model_data();
  Rng rng(seed + 1);
  for (NamedTensor& s : m.states) {
    for (float& v : s.data) {
      if (s.name == "Mean")
        v = static_cast<float>(rng.uniform(100.0, 150.0));
      else if (s.name == "StandardDeviation")
        v = static_cast<float>(rng.uniform(40.0, 80.0));
      else if (s.name == "TrainedMean")
        v = static_cast<float>(rng.uniform(-0.5, 0.5));
      else if (s.name == "TrainedVariance")
        v = static_cast<float>(rng.uniform(0.5, 2.0));
    }
  }
  p.cpu->load_weights(m);
  p.dev = std::make_unique<Network>(spec, backend_for(device_under_test(), dev_options));
  p.dev->load_weights(m);
  return p;
}

Tensor random_images(int64_t n, const Shape& per_image, Rng& rng) {
  Tensor x(Shape{n, per_image[0], per_image[1], per_image[2]});
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = static_cast<float>(rng.below(256));
  return x;
}

Tensor random_labels(int64_t n, int64_t num_classes, Rng& rng) {
  Tensor y(Shape{n}, Device::cpu(), DType::kI32);
  for (int64_t i = 0; i < n; ++i) y.data_i32()[i] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(num_classes)));
  return y;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "dltrain_gpu_tests.XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    throw DataError("dltrain_gpu_tests: cannot create a temporary folder under " +
                    std::filesystem::temp_directory_path().string() + " (set TMPDIR)");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace dlt::test::gpu
