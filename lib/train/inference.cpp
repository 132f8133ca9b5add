// The inference runtime of dltrain classify, segment and time (inference.h).
#include "train/inference.h"

#include "backend/cpu/cpu_backend.h"
#include "config/config.h"
#include "net/model_file.h"
#include "train/execution.h"

namespace dlt {

TrainingOptions inference_options() {
  TrainingOptions o;
  o.execution_environment = ExecutionEnvironment::kCpu;
  apply_environment_overrides(o);
  return o;
}

InferenceRuntime inference_runtime(TrainingOptions options, int gpu, int threads) {
  if (threads > 0) cpu_set_threads(threads);
  if (gpu >= 0) {
    options.execution_environment = ExecutionEnvironment::kGpu;
    options.gpu_device = gpu;
  }
  const Device device = resolve_device(options);
  return InferenceRuntime{device, backend_for(device, backend_options_for(options))};
}

std::unique_ptr<Network> inference_network(const ModelData& model, const std::string& file, const InferenceRuntime& rt,
                                           Precision precision) {
  auto net = std::make_unique<Network>(model, rt.backend, file);
  net->set_mixed_precision(precision == Precision::kMixed);
  return net;
}

}  // namespace dlt
