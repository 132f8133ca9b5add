// cuDNN's graph (backend) API for one convolution direction: the engine configurations cuDNN's
// heuristics suggest and every other engine for the problem, finalized into execution plans,
// each timed on the real buffers by the caller (cuda_conv_op.cpp). The legacy cudnnFind* calls
// offer only implicit-GEMM kernels for NHWC float32 on Hopper; the graph API's engines include
// FFT, Winograd and other GEMM kernels. On an H200 (cuDNN 9.19.0) ResNet-18's convolutions went
// from 23.1 to 18.1 ms forward and 56.7 to 33.2 ms backward per step at batch 512 (docs/gpu.md).
// CudnnEngines: legacy (env DLT_CUDNN_ENGINES=legacy) keeps to the legacy algorithms.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <cudnn.h>

namespace dlt::cuda {

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

// What the three directions share: x (n, hx, wx, c) NHWC, w (k, kh, kw, c / groups), y (n, oh,
// ow, k) NHWC, symmetric padding, stride and dilation, the storage type (float or bfloat16; the
// compute type is always float), the groups (ConvDesc::groups; the graph API has no group
// count: it reads the groups from the filter's c / groups input channels against x's c).
struct ConvGeometry {
  int64_t n = 0, hx = 0, wx = 0, c = 0, k = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  int64_t groups = 1;
};

class BackendDesc;
struct ConvGraph;

// One finalized execution plan. Execution takes the direction's three tensors in the order
// (x, w, y) for every direction: forward reads x and w and writes y; backward data reads w and
// y (= dy) and writes x (= dx); backward filter reads x and y (= dy) and writes w (= dw).
// Always overwrites the output (alpha 1, beta 0).
class ConvPlan {
 public:
  ConvPlan(std::shared_ptr<ConvGraph> graph, std::unique_ptr<BackendDesc> engine, std::unique_ptr<BackendDesc> config,
           std::vector<std::unique_ptr<BackendDesc>> choices, std::unique_ptr<BackendDesc> plan, int64_t index,
           size_t workspace, std::string notes);
  ~ConvPlan();
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;

  size_t workspace() const { return workspace_; }
  int64_t engine() const { return engine_; }  // cuDNN's global engine index
  // "engine 12 (tensor-op, winograd)": cuDNN's global engine index and its numerical notes.
  std::string describe() const;
  // Runs the plan on the handle's stream; returns cuDNN's status (no throw: measuring skips a
  // plan that fails).
  cudnnStatus_t execute(cudnnHandle_t handle, void* x, void* w, void* y, void* workspace) const;

 private:
  std::shared_ptr<ConvGraph> graph_;                   // tensors, convolution, operation and graph the plan refers to
  std::unique_ptr<BackendDesc> engine_desc_;           // the engine a default-knob configuration refers to (or null)
  std::vector<std::unique_ptr<BackendDesc>> choices_;  // the knob choices config_ was built from (or none)
  std::unique_ptr<BackendDesc> config_;                // the engine configuration the plan was finalized from
  std::unique_ptr<BackendDesc> plan_;
  int64_t engine_ = -1;
  size_t workspace_ = 0;
  std::string notes_;
};

// Engine 17 of the backward-filter operation (cuDNN 9.19; its notes name neither Winograd nor
// FFT) sums in float32 with errors that grow with the reduction: on an H200, 8.5e-3 of the
// largest weight gradient from the double reference at seed 001's conv2 (batch 256, 16x16x32 ->
// 32, 5x5: 65,536 products per weight), 9.6e-4 at a depthwise 5x5 of 1,568; every other plan of
// that search stayed within 1e-4. Timing picked it in the GPU tests (and, before this rule, for
// ResNet-18's 3x3 layers at batch 512, whose reductions are longer still), so a float32 weight
// gradient never runs it (bfloat16 rounds more than that anyway). The GPU test "weight-gradient
// plans at ResNet-18's shapes" measures its error and time there against the plans kept.
constexpr int64_t kImpreciseFloatWgradEngine = 17;

// Which plans conv_plans finalizes.
struct PlanSearch {
  bool tf32 = false;  // float32 may use TF32 tensor cores (AllowTF32)
  // bfloat16 may use engines that reduce in reduced precision (AllowReducedPrecisionReduction)
  bool reduced_precision_reduction = false;
  // engines that compile their kernels at run time (NVRTC) are tried too (CudnnRuntimeCompiled),
  // at most kMaxRuntimeCompiled of them (in the candidates' order: heuristics first)
  bool runtime_compiled = false;
  static constexpr int kMaxRuntimeCompiled = 4;
  bool deterministic = false;    // deterministic engines only (Deterministic)
  bool heuristics_only = false;  // mode A's suggestions only (else every engine after them)
  // CudnnEngines: exhaustive: heuristics modes B and fallback too, and every engine with each of
  // its knobs varied one at a time (repeated configurations dropped).
  bool exhaustive = false;
  size_t workspace_limit = 0;  // bytes
  int max_plans = 1;
  // The float32 weight gradient's imprecise engine (kImpreciseFloatWgradEngine) is offered too: for
  // the GPU test that measures its error and time at real shapes; training never sets it.
  bool imprecise_float_wgrad = false;
};

// Finalized plans for direction dir of g: the configurations cuDNN's heuristics (mode A;
// exhaustive: also B and fallback) suggest in their order, then (unless heuristics_only) every
// engine with its default knobs (exhaustive: and with each knob varied); at most max_plans, each
// within workspace_limit bytes, without those the switches forbid: tensor-core (TF32) or
// down-converting engines for float32 unless tf32, reduced-precision reductions for float32
// always and for bfloat16 unless reduced_precision_reduction, non-deterministic engines under
// deterministic, unless runtime_compiled, engines that compile at run time (a compilation per
// shape and direction; where NVRTC is missing they fail to finalize and are skipped), and unless
// imprecise_float_wgrad, for a float32 weight gradient the one engine whose sums drift
// (kImpreciseFloatWgradEngine). Empty when
// cuDNN has none or the graph API refuses the problem: the caller keeps the legacy algorithms.
std::vector<std::shared_ptr<const ConvPlan>> conv_plans(cudnnHandle_t handle, const ConvGeometry& g, ConvDirection dir,
                                                        const PlanSearch& search);

// The fastest of three timed calls of run on stream (after one untimed call) in milliseconds,
// by CUDA events; +infinity when a call does not return success; fewer calls once one took more
// than cutoff_ms. Synchronizes the stream: for measuring at first use, never while a CUDA graph
// is being captured.
float best_time_ms(cudaStream_t stream, const std::function<cudnnStatus_t()>& run, float cutoff_ms);

}  // namespace dlt::cuda
