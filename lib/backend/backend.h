// Backend: one per device and BackendOptions. Makes the heavy ops (ops.h), which read the
// options of the backend that made them, and runs the light element-wise work that layers,
// losses and optimizers need, both through the kernels its device registered (op_registry.h). Dispatch follows the
// tensor's device: backend_for(t.device()) for light work; a run makes its ops with backend_for(device, its options).
// There is no global mode.
//
// The public methods are not virtual: they check their arguments once, here (backend.cpp),
// then call the kernel the device registered (kernel_kinds.h), so cpu/ and cuda/ compute and
// do not check again. What only an asynchronous device has (CUDA graphs, staged uploads, a loss
// read later, peak device memory) is AsyncDevice's (async_device.h), asked for with
// async_device(); the CPU backend has none.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_options.h"
#include "backend/loss.h"
#include "backend/op_registry.h"
#include "backend/ops.h"
#include "backend/solver.h"
#include "tensor/tensor.h"

namespace dlt {

class AsyncDevice;

struct UpdateRule {
  Solver solver = Solver::kSgdm;
  float momentum = 0.9f;         // sgdm
  float b1 = 0.9f, b2 = 0.999f;  // adam, adamw: b1 and b2; rmsprop: b2
  float eps = 1e-8f;             // adam, adamw, rmsprop
  float l2 = 0.f;                // L2 regularization (with the parameter's factor)
  float wd = 0.f;                // adamw: decoupled weight decay (with the parameter's L2 factor)
};

// A number that changes from step to step: by value, or read by the device from element
// `index` of `in` (float, on the backend's device). A captured CUDA graph replays its kernels
// with the arguments they were captured with, so it reads them from memory that the caller
// refreshes before each step; the results are bit-identical to the same numbers by value.
struct StepScalar {
  float value = 0.f;
  const Tensor* in = nullptr;
  int64_t index = 0;
  static StepScalar at(const Tensor& t, int64_t i) { return {0.f, &t, i}; }
};

// The per-step numbers of an update: the learning rate and Adam's corrections c1, c2.
struct StepScalars {
  StepScalar lr, c1{1.f}, c2{1.f};
  // By value for step t (counted from 1): Adam's corrections as adam_correction computes them.
  static StepScalars at_step(const UpdateRule& rule, float lr, int64_t t);
};

// Adam's bias correction 1 / (1 - b^t), as every backend uses it (float from a double power).
float adam_correction(float b, int64_t t);

// A crop window: x is (n, h, w, c), the window (out_h, out_w) starts at row top, column left.
struct CropDesc {
  int64_t n = 1, h = 1, w = 1, c = 1;
  int64_t out_h = 1, out_w = 1, top = 0, left = 0;
};

// Channel shuffle of NHWC tensors with pixels = N * H * W positions of c channels in `groups`
// groups (groups divides c).
struct ChannelShuffleDesc {
  int64_t pixels = 1, c = 1, groups = 1;
};

// Channels [start, start + count) (0-based) of NHWC tensors with pixels = N * H * W positions
// of c channels.
struct ChannelSliceDesc {
  int64_t pixels = 1, c = 1, start = 0, count = 1;
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  Device device() const { return device_; }
  // What the ops this backend makes do (AllowTF32, ConvolutionAlgorithm, ...), fixed at creation.
  const BackendOptions& options() const { return options_; }
  virtual std::string name() const = 0;
  // The asynchronous-device extension, or null (the CPU).
  AsyncDevice* async_device() const { return async_; }

  // ---- the heavy ops (ops.h), made by the kernels registered for this device (op_registry.h) ----
  // The op for descriptor d from the best kernel that accepts it; throws DeviceError when none
  // does ("no kernel for op ... on cuda").
  template <class Desc>
  std::unique_ptr<typename Desc::Op> make(const Desc& d) {
    using Make = std::unique_ptr<typename Desc::Op> (*)(Backend&, const Desc&);
    using Accepts = bool (*)(const Backend&, const Desc&);
    for (const op_registry::Entry& e : op_registry::find(Desc::kOp, device().type)) {
      if (e.accepts && !reinterpret_cast<Accepts>(e.accepts)(*this, d)) continue;
      if (auto op = reinterpret_cast<Make>(e.fn)(*this, d)) return op;
    }
    op_registry::no_kernel(Desc::kOp, device().type);
  }
  // Whether a kernel of this device accepts d (what a fused op needs: the network asks before
  // it plans one; a kernel may still decline at make, for a reason only its library knows).
  template <class Desc>
  bool supports(const Desc& d) const {
    using Accepts = bool (*)(const Backend&, const Desc&);
    for (const op_registry::Entry& e : op_registry::find(Desc::kOp, device().type))
      if (!e.accepts || reinterpret_cast<Accepts>(e.accepts)(*this, d)) return true;
    return false;
  }

  // ---- element-wise (all tensors on this backend's device, same numel unless stated) ----
  void fill(Tensor& t, float value);
  void copy(const Tensor& src, Tensor& dst);
  // y = a * x + b * y (y is not read when b == 0)
  void axpby(float a, const Tensor& x, float b, Tensor& y);
  // y = x0 + x1 + ...
  void sum(const std::vector<const Tensor*>& xs, Tensor& y);
  void scale(Tensor& t, float s);
  void clamp(Tensor& t, float lo, float hi);
  double sum_squares(const Tensor& t);
  // Clipping by L2 norm with nothing read back (so a CUDA graph can hold it): norms is a
  // float32 tensor on this device; l2_norm_into sets norms[index] to the L2 norm of t
  // (accumulate: to sqrt(norms[index]^2 + sum of t's squares), in double; a norm, not its
  // square, so that norms up to FLT_MAX fit), clip_to_norm scales t by threshold / norms[index]
  // when that norm exceeds threshold and leaves it unchanged otherwise (also for a NaN norm).
  void l2_norm_into(const Tensor& t, Tensor& norms, int64_t index, bool accumulate);
  void clip_to_norm(Tensor& t, const Tensor& norms, int64_t index, double threshold);
  // y = (x - shift) * mul, shift and mul broadcast over the leading dimensions of x:
  // their numel divides x's and they repeat every numel(shift) elements (a mean image of
  // H*W*C, or per-channel values of C). mul may be undefined (then 1).
  void shift_scale(const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y);
  // Dropout: mask gets 0 or 1/(1-p) per element from (seed, stream); y = x * mask.
  void dropout_forward(const Tensor& x, Tensor& y, Tensor& mask, float p, uint64_t seed, uint64_t stream);

  // ---- multiplication: the one element-wise product, in two forms ----
  // y = x * m, element by element, all three of one numel (dropout's backward, squares); y may
  // be x or m.
  void multiply(const Tensor& x, const Tensor& m, Tensor& y);
  // With broadcasting (the multiplication layer; d: ProductDesc): y is (n, pixels, c), each
  // input (n, pixels, c) or (n, 1, c) (repeated over the pixels); inputs may repeat, none may
  // alias y. y = x0 * x1 * ..., multiplied in input order.
  void multiply(const std::vector<const Tensor*>& xs, Tensor& y, const ProductDesc& d);
  // The gradient of input i: dx = dy * (the product of the other inputs), summed over the
  // pixels when input i is (n, 1, c) (dx is then of that size). Overwrites dx, which may
  // alias no input and not dy.
  void multiply_backward(const Tensor& dy, const std::vector<const Tensor*>& xs, size_t i, Tensor& dx,
                         const ProductDesc& d);

  // ---- synchronized batch norm (data-parallel training; x is (N, H, W, C), stats are (C)) ----
  // Per-channel mean and biased variance of x over its N*H*W positions (N may be 0: then
  // mean = var = 0).
  void channel_moments(const Tensor& x, Tensor& mean, Tensor& var);
  // dx[., c] -= scale[c] / (sigma[c] * m) * (dshift[c] + xhat * dscale[c]),
  //   sigma = sqrt(var + epsilon), xhat = (x - mean[c]) / sigma,
  // which turns the gradient of a batch norm with constant (global) statistics into the exact
  // gradient through those statistics, given dshift / dscale summed over the global batch.
  void batch_norm_dx_correction(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& scale,
                                float epsilon, double m, const Tensor& dshift, const Tensor& dscale, Tensor& dx);

  // ---- max unpooling (SegNet's decoder): idx is int32 of the pooling output's shape
  // (N, Ho, Wo, C) and holds, for each max-pooling output, the position h * W + w of its
  // maximum in the input plane (n, c) (d: the pooling; padding never wins) ----
  // idx from x (N, H, W, C): the first maximum in the window, rows first (a NaN never wins).
  void max_pool_indices(const Tensor& x, Tensor& idx, const PoolDesc& d);
  // y (N, H, W, C) = 0 except y[n, idx[n, i, c], c] += x[n, i, c] for x of idx's shape.
  void max_unpool(const Tensor& x, const Tensor& idx, Tensor& y, const PoolDesc& d);
  // dx[n, i, c] = dy[n, idx[n, i, c], c]: the gradient of max_unpool.
  void max_unpool_backward(const Tensor& dy, const Tensor& idx, Tensor& dx, const PoolDesc& d);

  // ---- cropping (crop2d, U-Net's skip connections): x (N, H, W, C), y (N, out_h, out_w, C)
  // with the window inside x (d: CropDesc) ----
  // y = x[:, top : top + out_h, left : left + out_w, :].
  void crop2d(const Tensor& x, Tensor& y, const CropDesc& d);
  // dx = 0 except dx[:, top : top + out_h, left : left + out_w, :] = dy: the gradient of crop2d.
  void crop2d_backward(const Tensor& dy, Tensor& dx, const CropDesc& d);

  // ---- channel shuffle and slice (ShuffleNet): x (N, H, W, C), per pixel ----
  // y[p, j * G + g] = x[p, g * (C / G) + j] for G = d.groups (torchvision's channel_shuffle).
  void channel_shuffle(const Tensor& x, Tensor& y, const ChannelShuffleDesc& d);
  // dx[p, g * (C / G) + j] = dy[p, j * G + g]: the inverse permutation (a shuffle in C / G groups).
  void channel_shuffle_backward(const Tensor& dy, Tensor& dx, const ChannelShuffleDesc& d);
  // y (N, H, W, count) = x[..., start : start + count].
  void channel_slice(const Tensor& x, Tensor& y, const ChannelSliceDesc& d);
  // dx = 0 except dx[..., start : start + count] = dy: the gradient of channel_slice.
  void channel_slice_backward(const Tensor& dy, Tensor& dx, const ChannelSliceDesc& d);

  // ---- loss: probs (N, C) after softmax, labels int32 (N) on this device ----
  // The weighted mean cross-entropy over the counted labels,
  //   loss = sum_i w[l_i] * -log(probs[i, l_i]) / W,   W = sum_i w[l_i],
  // with w = opt.class_weights (all 1 when undefined), and the gradient with respect to the
  // softmax input, dlogits[i] = w[l_i] * (probs[i] - onehot(l_i)) / W, written when dlogits is
  // defined. Without weights and undefined labels this is the mean over N. A label of -1 is an
  // undefined pixel when opt.undefined_labels is set (it counts in no loss, gradient or count:
  // its dlogits row is 0); any other label outside 0..C-1 is a DataError. correct: counted
  // labels whose first maximal probability is theirs; counted: labels that are not undefined.
  double cross_entropy(const Tensor& probs, const Tensor& labels, Tensor& dlogits, int64_t* correct,
                       const LossOptions& opt = {}, int64_t* counted = nullptr);
  // The same loss without waiting for the device: writes dlogits as cross_entropy does and
  // leaves the totals (LossTotals) in `totals`, a tensor of kLossTotalsFloats floats on this
  // device; read_loss() waits for them and returns the mean loss. A training step issues
  // backward and the update before it reads its loss, so the device does not idle while the
  // host issues work. An AsyncDevice does this (its read waits for the loss alone, not for the
  // work issued after it); elsewhere the loss is computed at once.
  static constexpr int64_t kLossTotalsFloats = 32;
  void cross_entropy_async(const Tensor& probs, const Tensor& labels, Tensor& dlogits, Tensor& totals,
                           const LossOptions& opt = {});
  double read_loss(const Tensor& totals, const Tensor& labels, int64_t* correct, int64_t* counted = nullptr);

  // ---- the other losses (loss.h's LossKind; opt.kind chooses), as cross_entropy_async ----
  // Float targets (N * W floats, a row per image; N = opt.images), outputs of the same numel:
  //   mse:   sum over values of (y - t)^2 / 2, mean over the N images (MATLAB's half mean
  //          squared error; PyTorch's MSELoss is 2 / W times it); grad = (y - t) / N;
  //   mae:   sum |y - t| / N (PyTorch's L1Loss is 1 / W times it); grad = sign(y - t) / N;
  //   huber: sum h(y - t) / N with h(e) = e^2 / 2 for |e| <= d, d (|e| - d / 2) beyond
  //          (d = opt.huber_delta; PyTorch's HuberLoss is 1 / W times it); grad = h'(y - t) / N;
  //   binary-crossentropy: outputs are sigmoid probabilities p, targets 0 or 1: -sum [t log p +
  //          (1 - t) log(1 - p)] / N, logs of at least 1e-37 (PyTorch's BCELoss: 1 / W times it);
  //          grad (with respect to the sigmoid's input) = (p - t) / N.
  // Int32 labels as cross_entropy (probs (rows, C) after softmax; -1, when allowed, counts nowhere):
  //   generalized-dice: per image (opt.images images of rows / images pixels), MATLAB's
  //          generalizedDice: 1 - 2 sum_k w_k sum_p y t / sum_k w_k sum_p (y^2 + t^2), w_k = 1 /
  //          (sum_p t_k)^2 (0 if absent), mean over images with a counted pixel; no class weights;
  //   tversky: per image as generalized-dice, sum over the classes k of 1 - TI_k, TI_k = (TP + e) /
  //          (TP + alpha FP + beta FN + e), TP = sum_p y_k t_k, FP = sum_p y_k (1 - t_k), FN =
  //          sum_p (1 - y_k) t_k over the counted pixels, e = 1e-8 (MATLAB's Tversky loss example;
  //          alpha, beta = opt.tversky_alpha, opt.tversky_beta), mean over images with a counted pixel;
  //          no class weights;
  //   focal-crossentropy: -alpha (1 - p_l)^gamma log p_l, class-weighted and averaged as cross_entropy;
  //   the gradients through the softmax to its input: dlogit_j = p_j (g_j - sum_k p_k g_k).
  // The totals carry the metrics' sums (LossTotals; kernel_kinds.h says which kind fills which).
  // A bad label, or a binary target that is not 0 or 1, is a DataError from read_loss.
  void loss_async(const Tensor& outputs, const Tensor& targets, Tensor& grad, Tensor& totals, const LossOptions& opt);
  // The same at once, returning the totals (tests, host use).
  LossTotals loss(const Tensor& outputs, const Tensor& targets, Tensor& grad, const LossOptions& opt);
  // read_loss's totals, loss_sum replaced by the mean loss (the metrics' sums as they are).
  LossTotals read_loss_totals(const Tensor& totals, const Tensor& labels, int64_t* correct = nullptr,
                              int64_t* counted = nullptr);

  // ---- optimizers ----
  // One update of w by g (UpdateRule's formulas, solver.h). m is sgdm's velocity or Adam's first
  // moment (adam, adamw), s Adam's or RMSProp's second moment; each solver reads only its own (the other may
  // be undefined). All of equal numel, on this device.
  void optimizer_update(const UpdateRule& rule, const StepScalars& k, Tensor& w, const Tensor& g, Tensor& m, Tensor& s);

  // ---- for every device, meaningful on an AsyncDevice ----
  // Waits for the work issued so far (nothing to wait for on the CPU).
  void synchronize();
  // Peak bytes of device memory held by this backend's allocator (0 for the CPU).
  size_t peak_memory_bytes() const;

 protected:
  // async: the backend's AsyncDevice side (itself), or null.
  Backend(Device device, const BackendOptions& options, AsyncDevice* async = nullptr)
      : device_(device), async_(async), options_(options) {}

 private:
  // The registered kernel of kind K (kernel_kinds.h) for this device, on checked arguments.
  template <class K, class... Args>
  auto run(Args&&... args);

  Device device_;
  AsyncDevice* async_;
  BackendOptions options_;
};

// The backend of a device whose ops follow `options`: one instance per (device, options), made
// at the first request and kept for the process (thread-safe). All instances of one device
// share its memory, streams and library handles, so their work is ordered as one backend's;
// only the ops they make differ. The CPU backend always exists; asking for a GPU in a build
// without CUDA throws DeviceError("built without CUDA ..."). The one-argument form is the
// default options' instance: for the light work that follows a tensor's device.
Backend& backend_for(Device device, const BackendOptions& options);
Backend& backend_for(Device device);
// Number of usable GPUs (0 in a CPU-only build or when no driver/device is present).
int cuda_device_count();
// Why cuda_device_count() is 0: the failing cudaGetDeviceCount's error name and text (e.g.
// "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime
// version"), "no device" when it succeeded with none, or that the build has no CUDA; "" when
// GPUs are usable.
std::string cuda_unavailable_reason();
// The versions of the GPU libraries this process actually loaded: "CUDA driver 13.0, runtime
// 13.0, cuDNN 9.13.0, cuBLAS 13.0.2" (the driver's, when no GPU is usable); "" in a CPU build.
std::string cuda_library_versions();

}  // namespace dlt
