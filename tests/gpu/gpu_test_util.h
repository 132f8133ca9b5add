// Helpers for the GPU test binary: the device under test (cuda:0, or the CPU when
// DLT_GPU_TEST_DEVICE=cpu, a self-check of the test code on machines without a GPU), pairs of
// equal random tensors on the CPU and the device, and networks from the repository's configs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/async_device.h"
#include "backend/backend.h"
#include "backend/backend_options.h"
#include "net/model_file.h"
#include "net/network.h"
#include "support/tensor_utils.h"

namespace dlt::test::gpu {

// cuda:0 normally; the CPU under DLT_GPU_TEST_DEVICE=cpu (gpu_main.cpp).
Device device_under_test();
inline bool testing_a_gpu() { return !device_under_test().is_cpu(); }
inline Backend& dut_backend() { return backend_for(device_under_test()); }
// A staged upload on an AsyncDevice; on the CPU (the self-check) a copy at once.
inline void upload_begin(Backend& be, const Tensor& host, Tensor& dst) {
  if (AsyncDevice* dev = be.async_device())
    dev->upload_begin(host, dst);
  else
    dst.copy_from(host);
}
inline void upload_wait(Backend& be) {
  if (AsyncDevice* dev = be.async_device()) dev->upload_wait();
}
inline Backend& cpu_be() { return backend_for(Device::cpu()); }

// The same random values on the CPU (first) and on the device under test (second).
struct TensorPair {
  Tensor cpu, dev;
};
TensorPair random_pair(const Shape& shape, Rng& rng, float lo = -1.f, float hi = 1.f);

// Normwise relative difference (tensor_utils' compare) of a device tensor against a CPU one.
Comparison compare_tensors(const Tensor& got, const Tensor& want);

// configs/NAME.yaml of the repository: under $DLT_SOURCE_DIR when set (a bundled binary run
// from another checkout, scripts/device/gpu_session.sh), else the source tree it was built
// from, else the current directory.
std::string config_path(const std::string& name);
// The `layers:` of a config under configs/ (e.g. "cifar10-bn") as a NetworkSpec.
NetworkSpec config_network(const std::string& name);
// The layers of a YAML file without data or training sections (path relative to the source).
NetworkSpec config_network_file(const std::string& relative);
// Learnable i of net.params() is a Bias right after its layer's Weights, and that layer's only
// reader is the batchNormalization layer after it (not a layerNormalization, which keeps the
// bias): its gradient is zero up to rounding (the normalisation subtracts the bias again).
bool feeds_batch_norm(Network& net, size_t i);
// Whether learnable i is an attention's KeyBias, whose gradient is zero in exact arithmetic (a
// softmax row does not change when the same number is added to all its scores); not with cosine
// attention (its keys are normalized after the bias) nor with a rotary embedding (the bias is
// turned by each key's angles).
bool zero_key_bias(Network& net, size_t i);

// A CPU network initialised from seed, with non-trivial input normalization (a random mean
// image in [100, 150)) and batch-norm running statistics, and the same weights loaded into a
// network on the device under test, whose ops follow dev_options.
struct NetworkPair {
  std::unique_ptr<Network> cpu, dev;
};
NetworkPair network_pair(const NetworkSpec& spec, uint64_t seed, const BackendOptions& dev_options = {});

// Random pixel values in [0, 256) as (n, H, W, C) on the CPU and labels below num_classes.
Tensor random_images(int64_t n, const Shape& per_image, Rng& rng);
Tensor random_labels(int64_t n, int64_t num_classes, Rng& rng);

// The device under test's backend with the default options edited; the ops it makes follow
// them: dut_backend_with([](BackendOptions& o) { o.deterministic = true; }).make(d).
template <class Edit>
Backend& dut_backend_with(Edit edit) {
  BackendOptions o;
  edit(o);
  return backend_for(device_under_test(), o);
}

// A temporary folder removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace dlt::test::gpu
