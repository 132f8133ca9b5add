// How a backend computes: the run-environment training options that reach backend code (TF32,
// the CPU convolution algorithm, cuDNN's workspace, deterministic algorithms, cuDNN's fused
// convolution and batch norm paths, the CPU's fused bn + relu + max pooling). Each Backend
// instance carries the options it was created with (backend_for(device, options)); the ops it
// makes read them there when they are created. Nothing here is process-wide.
#pragma once
#include <cstdint>

namespace dlt {

// CudnnEngines: which cuDNN convolution implementations are measured at first use. auto: the
// legacy cudnnFind algorithms and the graph API's engine plans, the fastest runs; legacy: the
// legacy algorithms only; graph: the graph API's plans only (legacy where it offers none);
// exhaustive: as auto, with heuristics modes B and fallback and every engine's knobs varied one at
// a time (up to 200 plans per direction and shape: slower to choose, for long runs).
enum class CudnnEngines { kAuto, kLegacy, kGraph, kExhaustive };

// BatchNormKernels: who computes batch norm in GPU training. cudnn: cuDNN's calls (relu and its
// mask as separate passes); dltrain: dltrain's own kernels (cuda_bn_kernels.h), the relu fused.
enum class BatchNormKernels { kCudnn, kDltrain };

struct BackendOptions {
  bool allow_tf32 = false;            // AllowTF32: TF32 tensor cores for float32 (CUDA)
  // AllowReducedPrecisionReduction: bfloat16 (Precision: mixed) convolutions may run cuDNN
  // engines noted CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION (CUDA; PyTorch's autocast
  // does not filter them out).
  bool allow_reduced_precision_reduction = false;
  // CudnnRuntimeCompiled: the search of a grouped or depthwise convolution also times cuDNN
  // engines that compile their kernels at run time (NVRTC; CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION),
  // its fast depthwise kernels among them; at most 4 per shape and direction, each compiled when
  // first timed (CUDA).
  bool cudnn_runtime_compiled = true;
  // CudaFusedClippedRelu: on the GPU, a clippedRelu after a convolution runs in the convolution's
  // bias epilogue (the network's fusion plan; the CPU always fuses it, as a oneDNN post-op).
  bool cuda_fused_clipped_relu = false;
  bool direct_convolution = false;    // ConvolutionAlgorithm direct: NHWC direct only (CPU)
  int64_t cudnn_workspace_mb = 1024;  // CudnnWorkspaceMB: cuDNN's convolution workspace limit
  bool deterministic = false;         // Deterministic: only deterministic cuDNN algorithms
  bool fused_convolution = true;      // FusedConvolution: cudnnConvolutionBiasActivationForward
  // CudnnEngines: the cuDNN convolutions measured at first use (the enum above).
  CudnnEngines cudnn_engines = CudnnEngines::kAuto;
  bool batch_norm_ex = true;  // BatchNormEx: cuDNN's Ex batch norm (SPATIAL_PERSISTENT)
  BatchNormKernels batch_norm_kernels = BatchNormKernels::kCudnn;  // BatchNormKernels
  bool fused_bn_pool = true;  // FusedBatchNormPooling: BnReluMaxPoolOp in CPU training

  bool operator==(const BackendOptions&) const = default;
};

}  // namespace dlt
