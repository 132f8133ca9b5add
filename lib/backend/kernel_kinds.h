// The light kernels' kinds: the signature each device's kernel has and its registry name
// (op_registry.h). Backend's public methods (backend.h) check their arguments once and call
// the kernel of the backend's device with checked arguments (the tensors defined, on that
// device and of the sizes the public method states), so kernels compute and do not check.
// A backend registers its kernels where it implements them:
//   DLT_REGISTER_KERNEL(FillKernel, DeviceType::kCpu, fill);
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace dlt {

// A step scalar resolved by optimizer_update: `at` (on the device) when set, else `value`.
struct ScalarArg {
  float value = 0.f;
  const float* at = nullptr;
};
struct UpdateScalars {
  ScalarArg lr, c1, c2;
};

#define DLT_KERNEL_KIND(Kind, name, ...)     \
  struct Kind {                              \
    static constexpr const char* kOp = name; \
    using Fn = __VA_ARGS__;                  \
  }

DLT_KERNEL_KIND(FillKernel, "fill", void(Backend&, Tensor& t, float value));
DLT_KERNEL_KIND(CopyKernel, "copy", void(Backend&, const Tensor& src, Tensor& dst));
DLT_KERNEL_KIND(AxpbyKernel, "axpby", void(Backend&, float a, const Tensor& x, float b, Tensor& y));
DLT_KERNEL_KIND(SumKernel, "sum", void(Backend&, const std::vector<const Tensor*>& xs, Tensor& y));
DLT_KERNEL_KIND(ScaleKernel, "scale", void(Backend&, Tensor& t, float s));
DLT_KERNEL_KIND(ClampKernel, "clamp", void(Backend&, Tensor& t, float lo, float hi));
DLT_KERNEL_KIND(SumSquaresKernel, "sum_squares", double(Backend&, const Tensor& t));
DLT_KERNEL_KIND(L2NormIntoKernel, "l2_norm_into",
                void(Backend&, const Tensor& t, Tensor& norms, int64_t index, bool accumulate));
DLT_KERNEL_KIND(ClipToNormKernel, "clip_to_norm",
                void(Backend&, Tensor& t, const Tensor& norms, int64_t index, double threshold));
// mul may be undefined; shift and mul tile x (their numels > 0 divide x's).
DLT_KERNEL_KIND(ShiftScaleKernel, "shift_scale",
                void(Backend&, const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y));
// key: the mask's hash key (from seed and stream), keep_value: 1 / (1 - p), or 0 for p >= 1.
DLT_KERNEL_KIND(DropoutKernel, "dropout",
                void(Backend&, const Tensor& x, Tensor& y, Tensor& mask, float p, uint64_t key, float keep_value));
DLT_KERNEL_KIND(MultiplySameSizeKernel, "multiply_same_size",
                void(Backend&, const Tensor& x, const Tensor& m, Tensor& y));
// Each x of d.n * d.pixels * d.c elements (full) or d.n * d.c (repeated over the pixels); y and
// dy full, dx of input i's size. d.pixels == 1: every input is full.
DLT_KERNEL_KIND(MultiplyKernel, "multiply",
                void(Backend&, const std::vector<const Tensor*>& xs, Tensor& y, const ProductDesc& d));
DLT_KERNEL_KIND(MultiplyBackwardKernel, "multiply_backward",
                void(Backend&, const Tensor& dy, const std::vector<const Tensor*>& xs, size_t i, Tensor& dx,
                     const ProductDesc& d));
// positions = x.numel() / channels > 0.
DLT_KERNEL_KIND(ChannelMomentsKernel, "channel_moments",
                void(Backend&, const Tensor& x, int64_t positions, Tensor& mean, Tensor& var));
// positions > 0 and m > 0.
DLT_KERNEL_KIND(BatchNormDxCorrectionKernel, "batch_norm_dx_correction",
                void(Backend&, const Tensor& x, int64_t positions, const Tensor& mean, const Tensor& var,
                     const Tensor& scale, float epsilon, double m, const Tensor& dshift, const Tensor& dscale,
                     Tensor& dx));
// Sizes as the public methods check them (x / y / dx of the pooling input's numel, the others of
// its output's).
DLT_KERNEL_KIND(MaxPoolIndicesKernel, "max_pool_indices",
                void(Backend&, const Tensor& x, Tensor& idx, const PoolDesc& d));
DLT_KERNEL_KIND(MaxUnpoolKernel, "max_unpool",
                void(Backend&, const Tensor& x, const Tensor& idx, Tensor& y, const PoolDesc& d));
DLT_KERNEL_KIND(MaxUnpoolBackwardKernel, "max_unpool_backward",
                void(Backend&, const Tensor& dy, const Tensor& idx, Tensor& dx, const PoolDesc& d));
// x / dx of d.n * d.h * d.w * d.c, y / dy of d.n * d.out_h * d.out_w * d.c; the window inside.
DLT_KERNEL_KIND(Crop2dKernel, "crop2d", void(Backend&, const Tensor& x, Tensor& y, const CropDesc& d));
DLT_KERNEL_KIND(Crop2dBackwardKernel, "crop2d_backward",
                void(Backend&, const Tensor& dy, Tensor& dx, const CropDesc& d));
// x / y of d.pixels * d.c, d.groups dividing d.c (the backward is a shuffle in c / groups).
DLT_KERNEL_KIND(ChannelShuffleKernel, "channel_shuffle",
                void(Backend&, const Tensor& x, Tensor& y, const ChannelShuffleDesc& d));
// x / dx of d.pixels * d.c, y / dy of d.pixels * d.count, the channels inside.
DLT_KERNEL_KIND(ChannelSliceKernel, "channel_slice",
                void(Backend&, const Tensor& x, Tensor& y, const ChannelSliceDesc& d));
DLT_KERNEL_KIND(ChannelSliceBackwardKernel, "channel_slice_backward",
                void(Backend&, const Tensor& dy, Tensor& dx, const ChannelSliceDesc& d));
// labels.numel() = N > 0, probs.numel() = N * C; dlogits undefined or of probs' numel; class
// weights undefined or C floats on the device. A bad label sets first_bad.
DLT_KERNEL_KIND(CrossEntropyKernel, "cross_entropy",
                LossTotals(Backend&, const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                           Tensor& dlogits));
// The loss kernels return LossTotals: loss_sum and weight_sum (the mean's denominator) always;
// cross-entropy, Dice, Tversky and focal correct, counted and classes (C); regression counted (N),
// classes (W), sq_sum, abs_sum, ape_sum, ape_count and values; binary cross-entropy counted (N),
// classes (C), values, tp, fp, fn and exact. A bad label or target sets first_bad (the rest may
// then be partial). Backend::loss_async's comment (backend.h) has the formulas.
// outputs / targets of N * W floats (N = opt.images > 0), grad undefined or of their numel;
// opt.kind mse, mae or huber.
DLT_KERNEL_KIND(RegressionLossKernel, "regression_loss",
                LossTotals(Backend&, const Tensor& outputs, const Tensor& targets, const LossOptions& opt,
                           Tensor& grad));
// probs (after a sigmoid) / targets of N * C floats (N = opt.images > 0), dlogits undefined or of their numel (the
// gradient with respect to the sigmoid's input).
DLT_KERNEL_KIND(BinaryCrossEntropyKernel, "binary_cross_entropy",
                LossTotals(Backend&, const Tensor& probs, const Tensor& targets, const LossOptions& opt,
                           Tensor& dlogits));
// As CrossEntropyKernel, with opt.images > 0 dividing labels.numel().
DLT_KERNEL_KIND(GeneralizedDiceKernel, "generalized_dice",
                LossTotals(Backend&, const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                           Tensor& dlogits));
// As GeneralizedDiceKernel.
DLT_KERNEL_KIND(TverskyKernel, "tversky",
                LossTotals(Backend&, const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                           Tensor& dlogits));
DLT_KERNEL_KIND(FocalCrossEntropyKernel, "focal_cross_entropy",
                LossTotals(Backend&, const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                           Tensor& dlogits));
// m or s undefined when the solver does not use it.
DLT_KERNEL_KIND(OptimizerUpdateKernel, "optimizer_update",
                void(Backend&, const UpdateRule& rule, const UpdateScalars& k, Tensor& w, const Tensor& g, Tensor& m,
                     Tensor& s));

#undef DLT_KERNEL_KIND

}  // namespace dlt
