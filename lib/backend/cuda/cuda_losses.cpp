// The CUDA backend's losses (Backend::loss_async and read_loss_totals through AsyncDevice, and
// the loss kernels of kernel_kinds.h): the kernels of cuda_loss_kernels.cu write their totals
// into the totals tensor on the device; read_loss_totals waits for the loss alone.
#include <cstddef>
#include <cstring>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_loss_kernels.h"
#include "backend/kernel_kinds.h"
#include "util/error.h"

namespace dlt {

// The kernels' result is LossTotals, field for field.
static_assert(sizeof(cuda::LossResult) == sizeof(LossTotals));
static_assert(offsetof(cuda::LossResult, first_bad) == offsetof(LossTotals, first_bad));
static_assert(offsetof(cuda::LossResult, classes) == offsetof(LossTotals, classes));
static_assert(offsetof(cuda::LossResult, sq_sum) == offsetof(LossTotals, sq_sum));
static_assert(offsetof(cuda::LossResult, ape_count) == offsetof(LossTotals, ape_count));
static_assert(offsetof(cuda::LossResult, exact) == offsetof(LossTotals, exact));
static_assert(sizeof(LossTotals) <= Backend::kLossTotalsFloats * sizeof(float));
static_assert(cuda::kTverskyEpsilon == kTverskyEpsilon);

// Every loss kind's kernel: the loss into a totals tensor (loss_async, which dispatches on
// opt.kind), then its read (waits).
static LossTotals cuda_loss(Backend& be, const Tensor& outputs, const Tensor& targets, const LossOptions& opt,
                            Tensor& grad) {
  CudaBackend& gpu = cuda_backend_of(be);
  Tensor totals(Shape{Backend::kLossTotalsFloats}, be.device());
  gpu.loss_async(outputs, targets, opt, grad, totals);
  return gpu.read_loss_totals(totals);
}

// Backend::cross_entropy's options may carry another kind: its kernel is cross-entropy's.
static LossTotals cuda_cross_entropy(Backend& be, const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                                     Tensor& dlogits) {
  LossOptions ce = opt;
  ce.kind = LossKind::kCrossEntropy;
  return cuda_loss(be, probs, labels, ce, dlogits);
}

// The kernels write their LossTotals straight into the totals tensor; nothing waits.
// The result is also copied to pinned memory behind an event, for read_loss_totals; in a
// capture the event record is a node of the graph, so every replay records it.
void CudaBackend::loss_async(const Tensor& outputs, const Tensor& targets, const LossOptions& opt, Tensor& grad,
                             Tensor& totals) {
  auto* result = reinterpret_cast<cuda::LossResult*>(totals.data());
  float* g = grad.defined() ? grad.data() : nullptr;
  const float* weights = opt.class_weights.defined() ? opt.class_weights.data() : nullptr;
  enter();
  const cudaStream_t stream = ctx_.stream;
  switch (opt.kind) {
    case LossKind::kCrossEntropy: {
      const int64_t n = targets.numel();
      cuda::cross_entropy(outputs.data(), targets.data_i32(), n, outputs.numel() / n, weights, opt.undefined_labels, g,
                          scratch(cuda::cross_entropy_scratch(n)), result, stream);
      break;
    }
    case LossKind::kFocalCrossEntropy: {
      const int64_t n = targets.numel();
      cuda::focal_cross_entropy(outputs.data(), targets.data_i32(), n, outputs.numel() / n, weights,
                                opt.undefined_labels, opt.focal_gamma, opt.focal_alpha, g,
                                scratch(cuda::cross_entropy_scratch(n)), result, stream);
      break;
    }
    case LossKind::kGeneralizedDice: {
      const int64_t rows = targets.numel(), c = outputs.numel() / rows;
      cuda::generalized_dice(outputs.data(), targets.data_i32(), rows, c, opt.images, opt.undefined_labels, g,
                             scratch(cuda::generalized_dice_scratch(rows, c, opt.images)), result, stream);
      break;
    }
    case LossKind::kTversky: {
      const int64_t rows = targets.numel(), c = outputs.numel() / rows;
      cuda::tversky(outputs.data(), targets.data_i32(), rows, c, opt.images, opt.undefined_labels, opt.tversky_alpha,
                    opt.tversky_beta, g, scratch(cuda::tversky_scratch(rows, c, opt.images)), result, stream);
      break;
    }
    case LossKind::kMse:
    case LossKind::kMae:
    case LossKind::kHuber: {
      const cuda::RegressionKind kind = opt.kind == LossKind::kMse   ? cuda::RegressionKind::kMse
                                        : opt.kind == LossKind::kMae ? cuda::RegressionKind::kMae
                                                                     : cuda::RegressionKind::kHuber;
      const int64_t values = outputs.numel();
      cuda::regression_loss(outputs.data(), targets.data(), values, opt.images, kind, opt.huber_delta, g,
                            scratch(cuda::regression_loss_scratch(values)), result, stream);
      break;
    }
    case LossKind::kBinaryCrossEntropy:
      cuda::binary_cross_entropy(outputs.data(), targets.data(), opt.images, outputs.numel() / opt.images, g,
                                 scratch(cuda::binary_cross_entropy_scratch(opt.images)), result, stream);
      break;
  }
  s_.loss_pending_ = nullptr;
  DLT_CUDA(cudaMemcpyAsync(s_.loss_h_, totals.data(), sizeof(LossTotals), cudaMemcpyDeviceToHost, stream));
  DLT_CUDA(cudaEventRecordWithFlags(s_.loss_mark_, stream,
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

DLT_REGISTER_KERNEL(CrossEntropyKernel, DeviceType::kCuda, cuda_cross_entropy);
DLT_REGISTER_KERNEL(FocalCrossEntropyKernel, DeviceType::kCuda, cuda_loss);
DLT_REGISTER_KERNEL(GeneralizedDiceKernel, DeviceType::kCuda, cuda_loss);
DLT_REGISTER_KERNEL(TverskyKernel, DeviceType::kCuda, cuda_loss);
DLT_REGISTER_KERNEL(RegressionLossKernel, DeviceType::kCuda, cuda_loss);
DLT_REGISTER_KERNEL(BinaryCrossEntropyKernel, DeviceType::kCuda, cuda_loss);

}  // namespace dlt
