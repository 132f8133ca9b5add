// Reference ops: plain, obviously-correct double-precision NHWC implementations of every
// heavy backend op, forward and backward. They are the oracle for the backend agreement
// tests and for the layers' gradient checks; never used on the hot path.
//
// Conventions (the same as ops.h): tensors are flat std::vector<double> in NHWC order,
// conv weights (K, kh, kw, C), fc weights (K, in) over the HWC-flattened input, per-channel
// vectors (C). Shapes come from the same Desc structs the backends take. Backward functions
// return/overwrite gradients (never accumulate). Where an op fuses a relu (ConvDesc/FcDesc/
// BatchNormDesc::fuse_relu; a convolution's clipped at ConvDesc::relu_ceiling) the reference
// forward applies it too, but every reference backward takes dy as the gradient of the
// PRE-relu output: apply the relu mask first.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/adaptive_pool_op.h"
#include "backend/backend.h"
#include "backend/depth_to_space_op.h"
#include "backend/group_norm_op.h"
#include "backend/linear_attention_op.h"
#include "backend/ops.h"
#include "backend/prelu_op.h"
#include "backend/resize_op.h"
#include "backend/separable_attention_op.h"
#include "backend/token_ops.h"

namespace dlt::ref {

using Vec = std::vector<double>;

// ---- convolution: x (N,H,W,C), w (K,kh,kw,C/G), b (K) -> y (N,OH,OW,K) ----
// Stride, asymmetric padding (zeros), dilation (MATLAB factor: 1 = dense), groups (G =
// d.groups; filter k sees the input channels of group k / (K/G)).
Vec conv_forward(const ConvDesc& d, const Vec& x, const Vec& w, const Vec& b);
Vec conv_backward_data(const ConvDesc& d, const Vec& dy, const Vec& w);  // -> dx
void conv_backward_weights(const ConvDesc& d, const Vec& x, const Vec& dy, Vec& dw, Vec& db);

// ---- transposed convolution: x (N,H,W,C), w (C,kh,kw,K), b (K) -> y (N,OH,OW,K) ----
// Each input pixel scatters into y at (i * stride + a - crop_t, j * stride + b - crop_l);
// taps that land in the cropped border are dropped.
Vec deconv_forward(const DeconvDesc& d, const Vec& x, const Vec& w, const Vec& b);
Vec deconv_backward_data(const DeconvDesc& d, const Vec& dy, const Vec& w);  // -> dx
void deconv_backward_weights(const DeconvDesc& d, const Vec& x, const Vec& dy, Vec& dw, Vec& db);

// ---- fully connected: x (N, in), w (out, in), b (out) -> y (N, out) ----
Vec fc_forward(const FcDesc& d, const Vec& x, const Vec& w, const Vec& b);
Vec fc_backward_data(const FcDesc& d, const Vec& dy, const Vec& w);
void fc_backward_weights(const FcDesc& d, const Vec& x, const Vec& dy, Vec& dw, Vec& db);

// ---- pooling: x (N,H,W,C) -> y (N,OH,OW,C) ----
// Max ignores padding (and sends the gradient to the first maximum of the window in
// row-major window order); average divides by kh*kw, counting padding as zeros, or by the
// window's taps inside the input (exclude_padding).
Vec pool_forward(const PoolDesc& d, const Vec& x);
Vec pool_backward(const PoolDesc& d, const Vec& x, const Vec& dy);  // -> dx
// Max unpooling (Backend::max_pool_indices / max_unpool): each max-pooling output's position
// h * W + w of the first maximum of its window (rows first); the unpooled plane (sums where
// positions repeat).
std::vector<int32_t> max_pool_indices(const PoolDesc& d, const Vec& x);
Vec max_unpool(const PoolDesc& d, const Vec& pooled, const std::vector<int32_t>& idx);

// ---- batch norm over N*H*W per channel; var is the biased variance ----
Vec bn_forward_training(const BatchNormDesc& d, const Vec& x, const Vec& scale, const Vec& offset, Vec* mean, Vec* var);
Vec bn_forward_inference(const BatchNormDesc& d, const Vec& x, const Vec& scale, const Vec& offset, const Vec& mean,
                         const Vec& var);
// Training-mode backward (through the batch statistics). dy: gradient of the pre-relu output.
void bn_backward(const BatchNormDesc& d, const Vec& x, const Vec& dy, const Vec& scale, const Vec& mean, const Vec& var,
                 Vec& dx, Vec& dscale, Vec& doffset);

// ---- LRN across channels: y = x / (k + alpha/size * sum_window x^2)^beta ----
// Window of channel c: [c - (size-1)/2, c - (size-1)/2 + size), clipped to [0, C).
Vec lrn_forward(const LrnDesc& d, const Vec& x);
Vec lrn_backward(const LrnDesc& d, const Vec& x, const Vec& dy);  // -> dx

// ---- activations (elementwise), ops.h's ActKind with d.alpha, d.beta; d.numel is not read.
// The formulas written out in double, derivatives by hand, kinks as PyTorch's.
Vec act_forward(const ActDesc& d, const Vec& x);
Vec act_backward(const ActDesc& d, const Vec& x, const Vec& dy);  // -> dx

// ---- softmax over the last dimension of (rows, C) ----
Vec softmax_forward(int64_t rows, int64_t c, const Vec& x);
Vec softmax_backward(int64_t rows, int64_t c, const Vec& y, const Vec& dy);  // -> dx

// ---- channel concatenation of NHWC tensors with `pixels` = N*H*W ----
Vec concat_forward(int64_t pixels, const std::vector<int64_t>& channels, const std::vector<Vec>& xs);
std::vector<Vec> concat_backward(int64_t pixels, const std::vector<int64_t>& channels, const Vec& dy);

// ---- cropping (Backend::crop2d): x (N,H,W,C) -> y (N,out_h,out_w,C) at (top, left) ----
Vec crop2d_forward(const CropDesc& d, const Vec& x);
Vec crop2d_backward(const CropDesc& d, const Vec& dy);  // -> dx, zero outside the window

// ---- element-wise product with broadcasting (Backend::multiply): y (n, pixels, c); each
// input (n, pixels, c) or (n, c) repeated over the pixels (reference_product_norm.cpp) ----
Vec multiply_forward(const ProductDesc& d, const std::vector<Vec>& xs);
// -> the gradient of input i (its size): dy times the other inputs, summed over the pixels
// when input i is repeated.
Vec multiply_backward(const ProductDesc& d, const std::vector<Vec>& xs, const Vec& dy, size_t i);

// ---- layer normalization over rows of `length` values, value j of channel j % c
// (LayerNormDesc); mean and var (rows, biased) when non-null ----
Vec layer_norm_forward(const LayerNormDesc& d, const Vec& x, const Vec& scale, const Vec& offset, Vec* mean = nullptr,
                       Vec* var = nullptr);
// Through the row statistics (computed from x).
void layer_norm_backward(const LayerNormDesc& d, const Vec& x, const Vec& dy, const Vec& scale, Vec& dx, Vec& dscale,
                         Vec& doffset);

// ---- group normalization of NHWC x (n, pixels, c) in `groups` contiguous channel groups
// (GroupNormDesc): each image's group by its own mean and biased variance, then scale and
// offset per channel; mean and var (n * groups) when non-null (reference_product_norm.cpp) ----
Vec group_norm_forward(const GroupNormDesc& d, const Vec& x, const Vec& scale, const Vec& offset, Vec* mean = nullptr,
                       Vec* var = nullptr);
// Through the group statistics (computed from x).
void group_norm_backward(const GroupNormDesc& d, const Vec& x, const Vec& dy, const Vec& scale, Vec& dx, Vec& dscale,
                         Vec& doffset);

// ---- PReLU of NHWC x (n, pixels, c) with alpha of 1 or c values (PReluDesc)
// (reference_product_norm.cpp) ----
Vec prelu_forward(const PReluDesc& d, const Vec& x, const Vec& alpha);
void prelu_backward(const PReluDesc& d, const Vec& x, const Vec& alpha, const Vec& dy, Vec& dx, Vec& dalpha);

// ---- channel shuffle and slice (Backend::channel_shuffle / channel_slice), per pixel of
// NHWC tensors (reference_channel_ops.cpp) ----
// y[p, j * G + g] = x[p, g * (C / G) + j]; the backward scatters dy back through the same map.
Vec channel_shuffle_forward(const ChannelShuffleDesc& d, const Vec& x);
Vec channel_shuffle_backward(const ChannelShuffleDesc& d, const Vec& dy);  // -> dx
// y = x[..., start : start + count]; dx zero outside those channels.
Vec channel_slice_forward(const ChannelSliceDesc& d, const Vec& x);
Vec channel_slice_backward(const ChannelSliceDesc& d, const Vec& dy);  // -> dx
// adaptive average pooling (backend/adaptive_pool_op.h) from PyTorch's definition of
// AdaptiveAvgPool2d: output (i, j) averages rows floor(i H / Ho) .. ceil((i + 1) H / Ho) - 1 and
// the columns alike (computed in double, not with the op's integer helpers); the backward
// spreads each output's gradient evenly over its region.
Vec adaptive_pool_forward(const AdaptivePoolDesc& d, const Vec& x);
Vec adaptive_pool_backward(const AdaptivePoolDesc& d, const Vec& dy);  // -> dx
// depth to space (backend/depth_to_space_op.h), DCR or CRD, from ONNX's definition.
Vec depth_to_space_forward(const DepthToSpaceDesc& d, const Vec& x);
Vec depth_to_space_backward(const DepthToSpaceDesc& d, const Vec& dy);  // -> dx
// resize (backend/resize_op.h) from its definition: each output pixel a weighted sum of input
// pixels, the weights of height and width multiplied (nearest: 1 at the rounded source; bilinear:
// the hat max(0, 1 - |s - i|) at the clamped source s; bicubic: Keys' kernel at the four pixels
// around s, those past the edge counted for the edge pixel); the backward is the transpose.
// A resize of n images h x w x c to oh x ow (scale: the output / input size unless given);
// cubic_resize() makes one bicubic.
inline ResizeDesc resize_desc(int64_t n, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow, bool bilinear,
                              bool half_pixel, bool floor, double scale_h = 0, double scale_w = 0) {
  ResizeDesc d;
  d.n = n, d.h = h, d.w = w, d.c = c, d.oh = oh, d.ow = ow;
  d.scale_h = scale_h > 0 ? scale_h : static_cast<double>(oh) / static_cast<double>(h);
  d.scale_w = scale_w > 0 ? scale_w : static_cast<double>(ow) / static_cast<double>(w);
  d.bilinear = bilinear, d.half_pixel = half_pixel, d.floor = floor;
  return d;
}

inline ResizeDesc cubic_resize(ResizeDesc d) {
  d.bilinear = false;
  d.bicubic = true;
  return d;
}
// d with the corners' centres aligned (PyTorch's align_corners=True).
inline ResizeDesc aligned_resize(ResizeDesc d) {
  d.align_corners = true;
  return d;
}

Vec resize_forward(const ResizeDesc& d, const Vec& x);
Vec resize_backward(const ResizeDesc& d, const Vec& dy);  // -> dx
// batch broadcast (backend/token_ops.h): y[r, :] = x[r, :] + b (x empty: b repeated); the sum
// of dy's rows (b's gradient).
Vec batch_broadcast_add(const BatchBroadcastDesc& d, const Vec& x, const Vec& b);
Vec batch_sum(const BatchBroadcastDesc& d, const Vec& dy);
// spatial transpose (backend/token_ops.h): (n, h, w, c) -> (n, w, h, c); the backward back.
Vec spatial_transpose_forward(const SpatialTransposeDesc& d, const Vec& x);
Vec spatial_transpose_backward(const SpatialTransposeDesc& d, const Vec& dy);  // -> dx
Vec row_gather_forward(const RowGatherDesc& d, const Vec& x);
Vec row_gather_backward(const RowGatherDesc& d, const Vec& dy);  // -> dx
// head normalize (backend/token_ops.h): each group of dim values over max(its norm, eps), times
// exp(min(t[h], max_log_scale)) (t empty: 1); the backward's dx and dt (t empty: dt empty).
Vec head_normalize_forward(const HeadNormalizeDesc& d, const Vec& x, const Vec& t);
void head_normalize_backward(const HeadNormalizeDesc& d, const Vec& x, const Vec& t, const Vec& dy, Vec& dx, Vec& dt);
// rotary embedding (backend/token_ops.h): each pair of each token from d.prefix on rotated by
// its row of cos and sin; back: by the transposed rotation (the backward: dx from dy).
Vec rotary(const RotaryDesc& d, const Vec& x, const Vec& cos, const Vec& sin, bool back = false);
// separable self-attention (backend/separable_attention_op.h), from MobileViT v2's definition:
// x unfolded into (1 + 2c, P, N), softmax over N, the context, relu(v) times it, folded back;
// the backward's dx from dy by the chain rule through the same steps.
Vec separable_attention_forward(const SeparableAttentionDesc& d, const Vec& x);
Vec separable_attention_backward(const SeparableAttentionDesc& d, const Vec& x, const Vec& dy);
// ReLU linear attention (backend/linear_attention_op.h), from timm's LiteMLA: per image and head
// relu(Q) (relu(K)^T [V 1]), the first d columns over the last plus eps; the backward's dx.
Vec linear_attention_forward(const LinearAttentionDesc& d, const Vec& x);
Vec linear_attention_backward(const LinearAttentionDesc& d, const Vec& x, const Vec& dy);

// ---- cross-entropy of softmax probabilities (N, C) with integer labels (N) ----
// Returns the weighted mean sum w[l] * -log(max(p_l, 1e-37)) / sum w[l] over the rows whose
// label is not -1 (undefined); dlogits (if non-null) = w[l] (probs - onehot) / sum w[l], 0 for
// undefined rows; correct (if non-null) counts rows whose first argmax equals the label;
// counted the rows that are not undefined. weights empty: all 1.
double cross_entropy(int64_t n, int64_t c, const Vec& probs, const std::vector<int32_t>& labels, Vec* dlogits,
                     int64_t* correct, const Vec& weights = {}, int64_t* counted = nullptr);

}  // namespace dlt::ref
