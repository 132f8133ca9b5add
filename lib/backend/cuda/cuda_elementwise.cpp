// CudaBackend's element-wise work, cross-entropy, synchronized batch-norm helpers and optimizer
// updates: on arguments Backend has checked, one or a few kernel launches on the compute
// stream. Only sum_squares and cross_entropy wait for the GPU, to return their values.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_op_kernels.h"
#include "util/error.h"

namespace dlt {

void CudaBackend::do_fill(Tensor& t, float value) {
  enter();
  cuda::fill_value(t.data(), t.numel(), value, ctx_.stream);
}

void CudaBackend::do_copy(const Tensor& src, Tensor& dst) {
  if (src.data() == dst.data() || src.bytes() == 0) return;
  enter();
  DLT_CUDA(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice, ctx_.stream));
}

void CudaBackend::do_axpby(float a, const Tensor& x, float b, Tensor& y) {
  enter();
  cuda::axpby(a, x.data(), b, y.data(), y.numel(), ctx_.stream);
}

void CudaBackend::do_sum(const std::vector<const Tensor*>& xs, Tensor& y) {
  std::vector<const float*> ptrs;
  ptrs.reserve(xs.size());
  for (size_t j = 0; j < xs.size(); ++j) {
    // Inputs after the first chunk are added into y in place: y must not be one of them.
    DLT_CHECK(j < static_cast<size_t>(cuda::kSumChunk) || xs[j]->data() != y.data(),
              "sum: the output aliases input " << j << " (only the first " << cuda::kSumChunk
                                               << " inputs may be the output)");
    ptrs.push_back(xs[j]->data());
  }
  enter();
  cuda::sum(ptrs.data(), static_cast<int>(ptrs.size()), y.data(), y.numel(), ctx_.stream);
}

void CudaBackend::do_scale(Tensor& t, float s) {
  enter();
  cuda::scale(t.data(), t.numel(), s, ctx_.stream);
}

void CudaBackend::do_clamp(Tensor& t, float lo, float hi) {
  enter();
  cuda::clamp(t.data(), t.numel(), lo, hi, ctx_.stream);
}

double CudaBackend::do_sum_squares(const Tensor& t) {
  enter();
  auto* partials = static_cast<double*>(scratch(cuda::sum_squares_scratch() * sizeof(double)));
  cuda::sum_squares(t.data(), t.numel(), partials, static_cast<double*>(s_.result_d_), ctx_.stream);
  read_back(sizeof(double));
  return *static_cast<const double*>(s_.result_h_);
}

void CudaBackend::do_l2_norm_into(const Tensor& t, Tensor& norms, int64_t index, bool accumulate) {
  enter();
  auto* partials = static_cast<double*>(scratch(cuda::sum_squares_scratch() * sizeof(double)));
  cuda::l2_norm_into(t.data(), t.numel(), partials, norms.data() + index, accumulate, ctx_.stream);
}

void CudaBackend::do_clip_to_norm(Tensor& t, const Tensor& norms, int64_t index, double threshold) {
  enter();
  cuda::clip_to_norm(t.data(), t.numel(), norms.data() + index, threshold, ctx_.stream);
}

void CudaBackend::do_shift_scale(const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y) {
  const int64_t n = x.numel(), ns = shift.numel(), nm = mul.defined() ? mul.numel() : 1;
  enter();
  cuda::shift_scale(x.data(), shift.data(), ns, mul.defined() ? mul.data() : nullptr, nm, y.data(), n, ctx_.stream);
}

void CudaBackend::do_dropout_forward(const Tensor& x, Tensor& y, Tensor& mask, float p, uint64_t key,
                                     float keep_value) {
  enter();
  cuda::dropout_forward(x.data(), y.data(), mask.data(), x.numel(), key, p, keep_value, ctx_.stream);
}

void CudaBackend::do_multiply_same_size(const Tensor& x, const Tensor& m, Tensor& y) {
  enter();
  cuda::mul(x.data(), m.data(), y.data(), x.numel(), ctx_.stream);
}

void CudaBackend::do_channel_moments(const Tensor& x, int64_t positions, Tensor& mean, Tensor& var) {
  const int64_t c = mean.numel();
  enter();
  const size_t doubles = cuda::channel_moments_scratch(positions, c);
  auto* s = static_cast<double*>(scratch(doubles * sizeof(double)));
  cuda::channel_moments(x.data(), positions, c, mean.data(), var.data(), s, ctx_.stream);
}

void CudaBackend::do_batch_norm_dx_correction(const Tensor& x, int64_t positions, const Tensor& mean, const Tensor& var,
                                              const Tensor& scale, float epsilon, double m, const Tensor& dshift,
                                              const Tensor& dscale, Tensor& dx) {
  const int64_t c = mean.numel();
  enter();
  auto* coef = static_cast<float*>(scratch(3 * static_cast<size_t>(c) * sizeof(float)));
  cuda::batch_norm_dx_correction(x.data(), positions, c, mean.data(), var.data(), scale.data(), epsilon, m,
                                 dshift.data(), dscale.data(), dx.data(), coef, ctx_.stream);
}

void CudaBackend::do_max_pool_indices(const Tensor& x, Tensor& idx, const PoolDesc& d) {
  enter();
  cuda::max_pool_indices(x.data(), idx.data_i32(), d.n, d.h, d.w, d.c, d.out_h(), d.out_w(), d.kh, d.kw, d.stride_h,
                         d.stride_w, d.pad_t, d.pad_l, ctx_.stream);
}

void CudaBackend::do_max_unpool(const Tensor& x, const Tensor& idx, Tensor& y, const PoolDesc& d) {
  enter();
  DLT_CUDA(cudaMemsetAsync(y.data(), 0, y.bytes(), ctx_.stream));
  cuda::max_unpool(x.data(), idx.data_i32(), y.data(), d.n, d.out_h() * d.out_w(), d.h * d.w, d.c, ctx_.stream);
}

void CudaBackend::do_max_unpool_backward(const Tensor& dy, const Tensor& idx, Tensor& dx, const PoolDesc& d) {
  enter();
  cuda::max_unpool_backward(dy.data(), idx.data_i32(), dx.data(), d.n, d.out_h() * d.out_w(), d.h * d.w, d.c,
                            ctx_.stream);
}

// Cropping is the interior of an explicit padding: the conv ops' crop_nhwc kernel, and its
// gradient their zero pad_nhwc kernel (which writes every element of dx).
void CudaBackend::do_crop2d(const Tensor& x, Tensor& y, const CropDesc& d) {
  enter();
  if (d.n == 0) return;
  DLT_CUDA(cuda::crop_nhwc(x.data(), y.data(), d.n, d.out_h, d.out_w, d.c, d.top, d.h - d.out_h - d.top, d.left,
                           d.w - d.out_w - d.left, ctx_.stream));
}

void CudaBackend::do_crop2d_backward(const Tensor& dy, Tensor& dx, const CropDesc& d) {
  enter();
  if (d.n == 0) return;
  DLT_CUDA(cuda::pad_nhwc(dy.data(), dx.data(), d.n, d.out_h, d.out_w, d.c, d.top, d.h - d.out_h - d.top, d.left,
                          d.w - d.out_w - d.left, 0.f, ctx_.stream));
}

LossTotals CudaBackend::do_cross_entropy(const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                                         Tensor& dlogits) {
  Tensor totals(Shape{kLossTotalsFloats}, device());
  loss_async(probs, labels, opt, dlogits, totals);
  return read_loss_totals(totals);
}

// The kernels write their LossTotals straight into the totals tensor; nothing waits.
// The result is also copied to pinned memory behind an event, for read_loss_totals; in a
// capture the event record is a node of the graph, so every replay records it.
void CudaBackend::loss_async(const Tensor& probs, const Tensor& labels, const LossOptions& opt, Tensor& dlogits,
                             Tensor& totals) {
  static_assert(sizeof(cuda::CrossEntropyResult) == sizeof(LossTotals));
  static_assert(sizeof(LossTotals) <= kLossTotalsFloats * sizeof(float));
  const int64_t n = labels.numel();
  const int64_t c = probs.numel() / n;
  enter();
  cuda::cross_entropy(probs.data(), labels.data_i32(), n, c,
                      opt.class_weights.defined() ? opt.class_weights.data() : nullptr, opt.undefined_labels,
                      dlogits.defined() ? dlogits.data() : nullptr, scratch(cuda::cross_entropy_scratch(n)),
                      reinterpret_cast<cuda::CrossEntropyResult*>(totals.data()), ctx_.stream);
  s_.loss_pending_ = nullptr;
  DLT_CUDA(cudaMemcpyAsync(s_.loss_h_, totals.data(), sizeof(LossTotals), cudaMemcpyDeviceToHost, ctx_.stream));
  DLT_CUDA(cudaEventRecordWithFlags(s_.loss_mark_, ctx_.stream,
                                    s_.capturing_ ? cudaEventRecordExternal : cudaEventRecordDefault));
  (s_.capturing_ ? s_.graph_loss_ : s_.loss_pending_) = totals.data();
}

LossTotals CudaBackend::read_loss_totals(const Tensor& totals) {
  not_capturing("read_loss");
  enter();
  LossTotals r;
  if (s_.loss_pending_ == totals.data()) {
    // The copy made right after the loss kernel: wait for it alone, so the device goes on with
    // the backward pass and the update (issued since) while the host issues the next step.
    s_.loss_pending_ = nullptr;
    DLT_CUDA(cudaEventSynchronize(s_.loss_mark_));
    std::memcpy(&r, s_.loss_h_, sizeof(r));
  } else {
    DLT_CUDA(cudaMemcpyAsync(s_.result_h_, totals.data(), sizeof(r), cudaMemcpyDeviceToHost, ctx_.stream));
    DLT_CUDA(cudaStreamSynchronize(ctx_.stream));
    std::memcpy(&r, s_.result_h_, sizeof(r));
  }
  return r;
}

void CudaBackend::do_optimizer_update(const UpdateRule& r, const UpdateScalars& k, Tensor& w, const Tensor& g,
                                      Tensor& m, Tensor& s) {
  auto arg = [](const ScalarArg& a) { return cuda::Scalar{a.value, a.at}; };
  enter();
  switch (r.solver) {
    case Solver::kSgdm:
      cuda::sgdm_update(w.data(), g.data(), m.data(), w.numel(), arg(k.lr), r.momentum, r.l2, ctx_.stream);
      return;
    case Solver::kAdam:
      cuda::adam_update(w.data(), g.data(), m.data(), s.data(), w.numel(), arg(k.lr), r.b1, r.b2, r.eps, arg(k.c1),
                        arg(k.c2), r.l2, ctx_.stream);
      return;
    case Solver::kRmsprop:
      cuda::rmsprop_update(w.data(), g.data(), s.data(), w.numel(), arg(k.lr), r.b2, r.eps, r.l2, ctx_.stream);
      return;
  }
}

}  // namespace dlt
