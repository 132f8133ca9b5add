// CudaBackend's element-wise work, cross-entropy, synchronized batch-norm helpers and optimizer
// updates: argument checks on the host, then one or a few kernel launches on the compute
// stream. Only sum_squares and cross_entropy wait for the GPU, to return their values.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "util/error.h"
#include "util/rng.h"

namespace dlt {

namespace {

void same_numel(const Tensor& a, const Tensor& b, const char* op) {
  DLT_CHECK(a.numel() == b.numel(),
            op << ": tensors of " << a.numel() << " and " << b.numel() << " elements");
}

using Tensors = std::initializer_list<const Tensor*>;

void on(const Tensor& t, Device d, const char* op) {
  DLT_CHECK(t.defined() && t.device() == d,
            op << ": a tensor is " << (t.defined() ? "on " + t.device().str() : "undefined")
               << ", expected " << d.str());
}

}  // namespace

void CudaBackend::fill(Tensor& t, float value) {
  on(t, device(), "fill");
  enter();
  cuda::fill_value(t.data(), t.numel(), value, ctx_.stream);
}

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  same_numel(src, dst, "copy");
  on(src, device(), "copy");
  on(dst, device(), "copy");
  if (src.data() == dst.data() || src.bytes() == 0) return;
  enter();
  DLT_CUDA(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice,
                           ctx_.stream));
}

void CudaBackend::axpby(float a, const Tensor& x, float b, Tensor& y) {
  same_numel(x, y, "axpby");
  on(x, device(), "axpby");
  on(y, device(), "axpby");
  enter();
  cuda::axpby(a, x.data(), b, y.data(), y.numel(), ctx_.stream);
}

void CudaBackend::sum(const std::vector<const Tensor*>& xs, Tensor& y) {
  DLT_CHECK(!xs.empty(), "sum: no inputs");
  on(y, device(), "sum");
  std::vector<const float*> ptrs;
  ptrs.reserve(xs.size());
  for (size_t j = 0; j < xs.size(); ++j) {
    same_numel(*xs[j], y, "sum");
    on(*xs[j], device(), "sum");
    // Inputs after the first chunk are added into y in place: y must not be one of them.
    DLT_CHECK(j < static_cast<size_t>(cuda::kSumChunk) || xs[j]->data() != y.data(),
              "sum: the output aliases input " << j << " (only the first " << cuda::kSumChunk
                                               << " inputs may be the output)");
    ptrs.push_back(xs[j]->data());
  }
  enter();
  cuda::sum(ptrs.data(), static_cast<int>(ptrs.size()), y.data(), y.numel(), ctx_.stream);
}

void CudaBackend::scale(Tensor& t, float s) {
  on(t, device(), "scale");
  enter();
  cuda::scale(t.data(), t.numel(), s, ctx_.stream);
}

void CudaBackend::clamp(Tensor& t, float lo, float hi) {
  on(t, device(), "clamp");
  enter();
  cuda::clamp(t.data(), t.numel(), lo, hi, ctx_.stream);
}

double CudaBackend::sum_squares(const Tensor& t) {
  on(t, device(), "sum_squares");
  enter();
  auto* partials = static_cast<double*>(scratch(cuda::sum_squares_scratch() * sizeof(double)));
  cuda::sum_squares(t.data(), t.numel(), partials, static_cast<double*>(result_d_), ctx_.stream);
  read_back(sizeof(double));
  return *static_cast<const double*>(result_h_);
}

void CudaBackend::l2_norm_into(const Tensor& t, Tensor& norms, int64_t index, bool accumulate) {
  on(t, device(), "l2_norm_into");
  on(norms, device(), "l2_norm_into");
  DLT_CHECK(index >= 0 && index < norms.numel(),
            "l2_norm_into: slot " << index << " of " << norms.numel() << " norms");
  enter();
  auto* partials = static_cast<double*>(scratch(cuda::sum_squares_scratch() * sizeof(double)));
  cuda::l2_norm_into(t.data(), t.numel(), partials, norms.data() + index, accumulate,
                     ctx_.stream);
}

void CudaBackend::clip_to_norm(Tensor& t, const Tensor& norms, int64_t index, double threshold) {
  on(t, device(), "clip_to_norm");
  on(norms, device(), "clip_to_norm");
  DLT_CHECK(index >= 0 && index < norms.numel(),
            "clip_to_norm: slot " << index << " of " << norms.numel() << " norms");
  enter();
  cuda::clip_to_norm(t.data(), t.numel(), norms.data() + index, threshold, ctx_.stream);
}

void CudaBackend::shift_scale(const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y) {
  same_numel(x, y, "shift_scale");
  on(x, device(), "shift_scale");
  on(shift, device(), "shift_scale");
  on(y, device(), "shift_scale");
  if (mul.defined()) on(mul, device(), "shift_scale");
  const int64_t n = x.numel(), ns = shift.numel(), nm = mul.defined() ? mul.numel() : 1;
  DLT_CHECK(ns > 0 && nm > 0 && n % ns == 0 && n % nm == 0,
            "shift_scale: " << ns << " shifts / " << nm << " multipliers do not tile " << n
                            << " elements");
  enter();
  cuda::shift_scale(x.data(), shift.data(), ns, mul.defined() ? mul.data() : nullptr, nm,
                    y.data(), n, ctx_.stream);
}

void CudaBackend::dropout_forward(const Tensor& x, Tensor& y, Tensor& mask, float p,
                                  uint64_t seed, uint64_t stream) {
  same_numel(x, y, "dropout");
  same_numel(x, mask, "dropout mask");
  on(x, device(), "dropout");
  on(y, device(), "dropout");
  on(mask, device(), "dropout");
  // As the CPU backend: the same key, so the same mask for the same (seed, stream).
  const uint64_t key = Rng::derive(seed, {stream}).next_u64();
  const float keep_value = p < 1.f ? 1.f / (1.f - p) : 0.f;
  enter();
  cuda::dropout_forward(x.data(), y.data(), mask.data(), x.numel(), key, p, keep_value,
                        ctx_.stream);
}

void CudaBackend::mul(const Tensor& x, const Tensor& m, Tensor& y) {
  same_numel(x, m, "mul");
  same_numel(x, y, "mul");
  on(x, device(), "mul");
  on(m, device(), "mul");
  on(y, device(), "mul");
  enter();
  cuda::mul(x.data(), m.data(), y.data(), x.numel(), ctx_.stream);
}

void CudaBackend::channel_moments(const Tensor& x, Tensor& mean, Tensor& var) {
  const int64_t c = mean.numel();
  DLT_CHECK(c > 0 && var.numel() == c && x.numel() % c == 0,
            "channel_moments: " << x.numel() << " elements do not tile " << c << " channels");
  on(mean, device(), "channel_moments");
  on(var, device(), "channel_moments");
  const int64_t positions = x.numel() / c;
  enter();
  if (positions == 0) {
    cuda::fill_value(mean.data(), c, 0.f, ctx_.stream);
    cuda::fill_value(var.data(), c, 0.f, ctx_.stream);
    return;
  }
  on(x, device(), "channel_moments");
  const size_t doubles = cuda::channel_moments_scratch(positions, c);
  auto* s = static_cast<double*>(scratch(doubles * sizeof(double)));
  cuda::channel_moments(x.data(), positions, c, mean.data(), var.data(), s, ctx_.stream);
}

void CudaBackend::batch_norm_dx_correction(const Tensor& x, const Tensor& mean, const Tensor& var,
                                           const Tensor& scale, float epsilon, double m,
                                           const Tensor& dshift, const Tensor& dscale, Tensor& dx) {
  const int64_t c = mean.numel();
  const int64_t positions = dx_correction_positions(x, mean, var, scale, dshift, dscale, dx);
  if (positions == 0 || m <= 0) return;
  for (const Tensor* t : Tensors{&x, &mean, &var, &scale, &dshift, &dscale})
    on(*t, device(), "batch_norm_dx_correction");
  on(dx, device(), "batch_norm_dx_correction");
  enter();
  auto* coef = static_cast<float*>(scratch(3 * static_cast<size_t>(c) * sizeof(float)));
  cuda::batch_norm_dx_correction(x.data(), positions, c, mean.data(), var.data(), scale.data(),
                                 epsilon, m, dshift.data(), dscale.data(), dx.data(), coef,
                                 ctx_.stream);
}

double CudaBackend::cross_entropy(const Tensor& probs, const Tensor& labels, Tensor& dlogits,
                                  int64_t* correct) {
  Tensor totals(Shape{kLossTotalsFloats}, device());
  cross_entropy_async(probs, labels, dlogits, totals);
  return read_loss(totals, labels, correct);
}

// The kernel writes its CrossEntropyResult straight into the totals tensor; nothing waits.
// The result is also copied to pinned memory behind an event, for read_loss; in a capture
// the event record is a node of the graph, so every replay records it.
void CudaBackend::cross_entropy_async(const Tensor& probs, const Tensor& labels, Tensor& dlogits,
                                      Tensor& totals) {
  static_assert(sizeof(cuda::CrossEntropyResult) <= kLossTotalsFloats * sizeof(float));
  const int64_t n = labels.numel();
  DLT_CHECK(n > 0 && probs.numel() % n == 0,
            "cross_entropy: " << probs.numel() << " probabilities for " << n << " labels");
  DLT_CHECK(totals.numel() >= kLossTotalsFloats, "cross_entropy: totals too small");
  const int64_t c = probs.numel() / n;
  on(probs, device(), "cross_entropy");
  on(labels, device(), "cross_entropy labels");
  on(totals, device(), "cross_entropy totals");
  if (dlogits.defined()) {
    same_numel(probs, dlogits, "cross_entropy dlogits");
    on(dlogits, device(), "cross_entropy dlogits");
  }
  enter();
  cuda::cross_entropy(probs.data(), labels.data_i32(), n, c,
                      dlogits.defined() ? dlogits.data() : nullptr,
                      scratch(cuda::cross_entropy_scratch(n)),
                      reinterpret_cast<cuda::CrossEntropyResult*>(totals.data()), ctx_.stream);
  loss_pending_ = nullptr;
  DLT_CUDA(cudaMemcpyAsync(loss_h_, totals.data(), sizeof(cuda::CrossEntropyResult),
                           cudaMemcpyDeviceToHost, ctx_.stream));
  DLT_CUDA(cudaEventRecordWithFlags(loss_mark_, ctx_.stream,
                                    capturing_ ? cudaEventRecordExternal : cudaEventRecordDefault));
  (capturing_ ? graph_loss_ : loss_pending_) = totals.data();
}

double CudaBackend::read_loss(const Tensor& totals, const Tensor& labels, int64_t* correct) {
  on(totals, device(), "read_loss");
  not_capturing("read_loss");
  enter();
  cuda::CrossEntropyResult r;
  if (loss_pending_ == totals.data()) {
    // The copy made right after the loss kernel: wait for it alone, so the device goes on with
    // the backward pass and the update (issued since) while the host issues the next step.
    loss_pending_ = nullptr;
    DLT_CUDA(cudaEventSynchronize(loss_mark_));
    std::memcpy(&r, loss_h_, sizeof(r));
  } else {
    DLT_CUDA(cudaMemcpyAsync(result_h_, totals.data(), sizeof(r), cudaMemcpyDeviceToHost, ctx_.stream));
    DLT_CUDA(cudaStreamSynchronize(ctx_.stream));
    std::memcpy(&r, result_h_, sizeof(r));
  }
  const int64_t n = labels.numel();
  if (r.first_bad != UINT64_MAX) {
    const auto bad = static_cast<int64_t>(r.first_bad);
    int32_t label = 0;
    DLT_CUDA(cudaMemcpyAsync(result_h_, labels.data_i32() + bad, sizeof(int32_t),
                             cudaMemcpyDeviceToHost, ctx_.stream));
    DLT_CUDA(cudaStreamSynchronize(ctx_.stream));
    std::memcpy(&label, result_h_, sizeof(label));
    throw DataError("cross_entropy: label " + std::to_string(label) + " of sample " +
                    std::to_string(bad) + " is outside the network's classes (check the labels)");
  }
  if (correct) *correct = static_cast<int64_t>(r.correct);
  return n > 0 ? r.loss_sum / static_cast<double>(n) : 0.0;
}

void CudaBackend::sgdm_update(Tensor& w, const Tensor& g, Tensor& v, float lr, float momentum,
                              float l2) {
  same_numel(w, g, "sgdm_update");
  same_numel(w, v, "sgdm_update");
  for (const Tensor* t : Tensors{&w, &g, &v}) on(*t, device(), "sgdm_update");
  enter();
  cuda::sgdm_update(w.data(), g.data(), v.data(), w.numel(), lr, momentum, l2, ctx_.stream);
}

void CudaBackend::adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& s, float lr,
                              float b1, float b2, float eps, int64_t t, float l2) {
  same_numel(w, g, "adam_update");
  same_numel(w, m, "adam_update");
  same_numel(w, s, "adam_update");
  DLT_CHECK(t >= 1, "adam_update: step " << t << " must start at 1");
  for (const Tensor* x : Tensors{&w, &g, &m, &s}) on(*x, device(), "adam_update");
  // As the CPU backend computes them.
  const float c1 = adam_correction(b1, t);
  const float c2 = adam_correction(b2, t);
  enter();
  cuda::adam_update(w.data(), g.data(), m.data(), s.data(), w.numel(), lr, b1, b2, eps, c1, c2,
                    l2, ctx_.stream);
}

void CudaBackend::rmsprop_update(Tensor& w, const Tensor& g, Tensor& s, float lr, float b2,
                                 float eps, float l2) {
  same_numel(w, g, "rmsprop_update");
  same_numel(w, s, "rmsprop_update");
  for (const Tensor* t : Tensors{&w, &g, &s}) on(*t, device(), "rmsprop_update");
  enter();
  cuda::rmsprop_update(w.data(), g.data(), s.data(), w.numel(), lr, b2, eps, l2, ctx_.stream);
}

namespace {
// The device address of a step scalar (one float of k.values, on device d).
const float* scalar_at(const Backend::StepScalars& k, int64_t i, Device d, const char* op) {
  DLT_CHECK(k.values && k.values->device() == d && i >= 0 && i < k.values->numel(),
            op << ": step scalar " << i << " is not in a tensor of that many floats on " << d.str());
  return k.values->data() + i;
}
}  // namespace

void CudaBackend::sgdm_update_from(Tensor& w, const Tensor& g, Tensor& v, const StepScalars& k,
                                   float momentum, float l2) {
  same_numel(w, g, "sgdm_update");
  same_numel(w, v, "sgdm_update");
  for (const Tensor* t : Tensors{&w, &g, &v}) on(*t, device(), "sgdm_update");
  enter();
  cuda::sgdm_update_from(w.data(), g.data(), v.data(), w.numel(),
                         scalar_at(k, k.lr, device(), "sgdm_update"), momentum, l2, ctx_.stream);
}

void CudaBackend::adam_update_from(Tensor& w, const Tensor& g, Tensor& m, Tensor& s,
                                   const StepScalars& k, float b1, float b2, float eps, float l2) {
  same_numel(w, g, "adam_update");
  same_numel(w, m, "adam_update");
  same_numel(w, s, "adam_update");
  for (const Tensor* x : Tensors{&w, &g, &m, &s}) on(*x, device(), "adam_update");
  enter();
  cuda::adam_update_from(w.data(), g.data(), m.data(), s.data(), w.numel(),
                         scalar_at(k, k.lr, device(), "adam_update"), b1, b2, eps,
                         scalar_at(k, k.c1, device(), "adam_update"),
                         scalar_at(k, k.c2, device(), "adam_update"), l2, ctx_.stream);
}

void CudaBackend::rmsprop_update_from(Tensor& w, const Tensor& g, Tensor& s, const StepScalars& k,
                                      float b2, float eps, float l2) {
  same_numel(w, g, "rmsprop_update");
  same_numel(w, s, "rmsprop_update");
  for (const Tensor* t : Tensors{&w, &g, &s}) on(*t, device(), "rmsprop_update");
  enter();
  cuda::rmsprop_update_from(w.data(), g.data(), s.data(), w.numel(),
                            scalar_at(k, k.lr, device(), "rmsprop_update"), b2, eps, l2,
                            ctx_.stream);
}

}  // namespace dlt
