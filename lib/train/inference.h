// How dltrain classify, segment and time run a network outside training, set up in one place:
// the CPU threads, the device (the CPU, or a GPU asked for), and that device's backend with the
// run-environment options (ConvolutionAlgorithm, AllowTF32, ...), which the network's ops follow.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"
#include "config/options.h"
#include "net/network.h"

namespace dlt {

struct ModelData;

struct InferenceRuntime {
  Device device;
  Backend& backend;  // backend_for(device, backend_options_for(the options))
};

// The run-environment options of a command that reads no config: the defaults on the CPU
// (ExecutionEnvironment cpu), overridden by the environment variables (DLT_CONV_ALGO, ...).
// Throws ConfigError naming a variable with a bad value.
TrainingOptions inference_options();

// threads > 0: that many CPU threads; gpu >= 0: ExecutionEnvironment gpu on GPUDevice gpu.
// The device is resolve_device's (DeviceError for a GPU this build or machine lacks).
InferenceRuntime inference_runtime(TrainingOptions options, int gpu, int threads);

// A trained model's network on the runtime's backend, ready to infer; Precision mixed
// multiplies conv and fullyConnected in bfloat16. ModelError names `file`.
std::unique_ptr<Network> inference_network(const ModelData& model, const std::string& file, const InferenceRuntime& rt,
                                           Precision precision = Precision::kSingle);

}  // namespace dlt
