// Backend: one per device. Makes the heavy ops (ops.h) and runs the light element-wise work
// that layers, losses and optimizers need. Dispatch follows the tensor's device:
// backend_for(t.device()). There is no global mode.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "tensor/tensor.h"

namespace dlt {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;

  virtual std::unique_ptr<ConvOp> make_conv(const ConvDesc& d) = 0;
  virtual std::unique_ptr<FcOp> make_fc(const FcDesc& d) = 0;
  virtual std::unique_ptr<PoolOp> make_pool(const PoolDesc& d) = 0;
  virtual std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormDesc& d) = 0;
  virtual std::unique_ptr<LrnOp> make_lrn(const LrnDesc& d) = 0;
  virtual std::unique_ptr<ActOp> make_act(const ActDesc& d) = 0;
  virtual std::unique_ptr<SoftmaxOp> make_softmax(int64_t rows, int64_t channels) = 0;
  virtual std::unique_ptr<ConcatOp> make_concat(int64_t n, int64_t h, int64_t w,
                                                const std::vector<int64_t>& channels) = 0;

  // ---- element-wise (all tensors on this backend's device, same numel unless stated) ----
  virtual void fill(Tensor& t, float value) = 0;
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  // y = a * x + b * y
  virtual void axpby(float a, const Tensor& x, float b, Tensor& y) = 0;
  // y = x0 + x1 + ...
  virtual void sum(const std::vector<const Tensor*>& xs, Tensor& y) = 0;
  virtual void scale(Tensor& t, float s) = 0;
  virtual void clamp(Tensor& t, float lo, float hi) = 0;
  virtual double sum_squares(const Tensor& t) = 0;
  // Clipping by L2 norm with nothing read back (so a CUDA graph can hold it): norms is a
  // float32 tensor on this device; l2_norm_into sets norms[index] to the L2 norm of t
  // (accumulate: to sqrt(norms[index]^2 + sum of t's squares), in double; a norm, not its
  // square, so that norms up to FLT_MAX fit), clip_to_norm scales t by threshold / norms[index]
  // when that norm exceeds threshold and leaves it unchanged otherwise (also for a NaN norm).
  virtual void l2_norm_into(const Tensor& t, Tensor& norms, int64_t index, bool accumulate) = 0;
  virtual void clip_to_norm(Tensor& t, const Tensor& norms, int64_t index, double threshold) = 0;
  // y = (x - shift) * mul, shift and mul broadcast over the leading dimensions of x:
  // their numel divides x's and they repeat every numel(shift) elements (a mean image of
  // H*W*C, or per-channel values of C). mul may be undefined (then 1).
  virtual void shift_scale(const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y) = 0;
  // Dropout: mask gets 0 or 1/(1-p) per element from (seed, stream); y = x * mask.
  virtual void dropout_forward(const Tensor& x, Tensor& y, Tensor& mask, float p, uint64_t seed,
                               uint64_t stream) = 0;
  // Mean over the batch of per-sample reductions is done by the layers; this is y = x * m.
  virtual void mul(const Tensor& x, const Tensor& m, Tensor& y) = 0;

  // ---- synchronized batch norm (data-parallel training; x is (N, H, W, C), stats are (C)) ----
  // Per-channel mean and biased variance of x over its N*H*W positions (N may be 0: then
  // mean = var = 0).
  virtual void channel_moments(const Tensor& x, Tensor& mean, Tensor& var) = 0;
  // dx[., c] -= scale[c] / (sigma[c] * m) * (dshift[c] + xhat * dscale[c]),
  //   sigma = sqrt(var + epsilon), xhat = (x - mean[c]) / sigma,
  // which turns the gradient of a batch norm with constant (global) statistics into the exact
  // gradient through those statistics, given dshift / dscale summed over the global batch.
  virtual void batch_norm_dx_correction(const Tensor& x, const Tensor& mean, const Tensor& var,
                                        const Tensor& scale, float epsilon, double m,
                                        const Tensor& dshift, const Tensor& dscale, Tensor& dx) = 0;
  // batch_norm_dx_correction's shape checks, shared by the backends: throws when the shapes
  // do not agree, else returns the positions (x.numel() / channels).
  static int64_t dx_correction_positions(const Tensor& x, const Tensor& mean, const Tensor& var,
                                         const Tensor& scale, const Tensor& dshift,
                                         const Tensor& dscale, const Tensor& dx);

  // ---- host -> device transfers that overlap compute ----
  // Starts copying host (CPU memory) into dst (on this device); work issued after
  // upload_wait() sees the data. The CPU backend copies at once.
  virtual void upload_begin(const Tensor& host, Tensor& dst) { dst.copy_from(host); }
  virtual void upload_wait() {}
  // Peak bytes of device memory held by this backend's allocator (0 for the CPU).
  virtual size_t peak_memory_bytes() const { return 0; }

  // ---- loss: probs (N, C) after softmax, labels int32 (N) on this device ----
  // Returns the mean cross-entropy; writes dlogits = (probs - onehot(labels)) / N when
  // dlogits is defined (the gradient with respect to the softmax input).
  virtual double cross_entropy(const Tensor& probs, const Tensor& labels, Tensor& dlogits,
                               int64_t* correct) = 0;

  // ---- the same loss without waiting for the device ----
  // Writes dlogits as cross_entropy does and leaves the totals (loss sum, correct count, first
  // bad label) in `totals`, a tensor of kLossTotalsFloats floats on this device; read_loss()
  // waits for them and returns the mean loss. A training step issues backward and the update
  // before it reads its loss, so the device does not idle while the host issues work; on CUDA
  // read_loss waits for the loss alone, not for the work issued after it (so it is no
  // synchronize). The defaults run cross_entropy at once (right for the CPU).
  static constexpr int64_t kLossTotalsFloats = 8;
  virtual void cross_entropy_async(const Tensor& probs, const Tensor& labels, Tensor& dlogits,
                                   Tensor& totals);
  virtual double read_loss(const Tensor& totals, const Tensor& labels, int64_t* correct);

  // ---- optimizers (w, g and state of equal numel) ----
  // v = momentum * v - lr * (g + l2 * w); w += v      (MATLAB's sgdm)
  virtual void sgdm_update(Tensor& w, const Tensor& g, Tensor& v, float lr, float momentum,
                           float l2) = 0;
  // g' = g + l2 * w; m = b1 m + (1-b1) g'; s = b2 s + (1-b2) g'^2;
  // w -= lr * (m / (1-b1^t)) / (sqrt(s / (1-b2^t)) + eps)
  virtual void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& s, float lr, float b1,
                           float b2, float eps, int64_t t, float l2) = 0;
  // g' = g + l2 * w; s = b2 s + (1-b2) g'^2; w -= lr * g' / (sqrt(s) + eps)
  virtual void rmsprop_update(Tensor& w, const Tensor& g, Tensor& s, float lr, float b2, float eps,
                              float l2) = 0;
  // Adam's bias correction 1 / (1 - b^t), as both backends compute it (float from a double power).
  static float adam_correction(float b, int64_t t);

  // ---- the same updates with the per-step scalars in device memory (CUDA Graphs) ----
  // A captured step replays its kernels with the arguments they were captured with, so what
  // changes between steps (the learning rate, Adam's corrections) is read from values (float,
  // on this device) at the given indices; the caller refreshes values before each step. The
  // results are bit-identical to the by-value updates given the same numbers.
  struct StepScalars {
    const Tensor* values = nullptr;
    int64_t lr = 0;             // the parameter's learning rate
    int64_t c1 = -1, c2 = -1;   // adam: adam_correction(b1, t), adam_correction(b2, t)
  };
  virtual void sgdm_update_from(Tensor& w, const Tensor& g, Tensor& v, const StepScalars& k,
                           float momentum, float l2) = 0;
  virtual void adam_update_from(Tensor& w, const Tensor& g, Tensor& m, Tensor& s, const StepScalars& k,
                           float b1, float b2, float eps, float l2) = 0;
  virtual void rmsprop_update_from(Tensor& w, const Tensor& g, Tensor& s, const StepScalars& k,
                              float b2, float eps, float l2) = 0;

  // ---- CUDA Graphs (docs/gpu.md "CUDA Graphs"): record a step's device work once, replay it ----
  // begin_capture() starts recording the work issued to this device (false: this backend
  // cannot capture, e.g. the CPU). Until end_capture() the work is recorded, not run, and
  // nothing may allocate or free device memory, wait for the device or upload. end_capture()
  // instantiates the graph (throws DeviceError naming the cause when the capture failed);
  // abort_capture() ends a failed capture and keeps nothing. replay() launches the graph and
  // returns true, or false (launching nothing) when there is none or memory it uses has been
  // freed since the capture; it does not join uploads begun before it (upload_wait() those
  // the graph reads). drop_capture() frees the graph.
  virtual bool begin_capture() { return false; }
  virtual void end_capture() {}
  virtual void abort_capture() noexcept {}
  virtual bool replay() { return false; }
  virtual void drop_capture() {}

  virtual void synchronize() {}
};

// The backend of a device. The CPU backend always exists; asking for a GPU in a build
// without CUDA throws DeviceError("built without CUDA ...").
Backend& backend_for(Device device);
// Number of usable GPUs (0 in a CPU-only build or when no driver/device is present).
int cuda_device_count();

}  // namespace dlt
