// The gradient table: for every op with a backward pass (each heavy op of the registry, and each
// light kernel with a `<name>_backward` partner), the double reference's backward against
// central differences of the reference's forward. The agreement table (op_agreement.h) holds
// every backend's forward and backward to that reference, so the two together check each
// backend's gradients; a new op adds one row here and one there.
//
// The check is directional, so that a row costs two forward passes per input: with a random
// output weighting r and a random direction v, d/dt <forward(x + t v), r> at t = 0, taken as
// (L(h) - L(-h)) / 2h, must equal <backward(x, r), v>. Inputs are drawn away from the kinks
// (ReLU's 0, the pooling's ties) only by chance; the seeds are fixed.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "backend/adaptive_pool_op.h"
#include "backend/attention_op.h"
#include "backend/depth_to_space_op.h"
#include "backend/kernel_kinds.h"
#include "backend/linear_attention_op.h"
#include "backend/ops.h"
#include "backend/resize_op.h"
#include "backend/separable_attention_op.h"
#include "backend/token_ops.h"
#include "support/reference_attention.h"
#include "support/reference_losses.h"
#include "support/reference_ops.h"
#include "support/tensor_utils.h"

namespace dlt::test {

struct GradientRow {
  std::string name;
  std::string op;  // the registry name (op_registry.h) it covers
  std::vector<Vec> inputs;
  std::function<Vec(const std::vector<Vec>&)> forward;
  // The gradient of <forward(inputs), dy> with respect to each input.
  std::function<std::vector<Vec>(const std::vector<Vec>&, const Vec& dy)> backward;
};

inline double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Runs the directional check on every input of row; tol relative to the derivative's size.
inline void check_gradient(const GradientRow& row, double tol = 1e-6) {
  Rng rng(101);
  const Vec y = row.forward(row.inputs);
  const Vec r = random_vec(static_cast<int64_t>(y.size()), rng);
  const std::vector<Vec> grads = row.backward(row.inputs, r);
  REQUIRE(grads.size() == row.inputs.size());
  const double h = 1e-6;
  for (size_t j = 0; j < row.inputs.size(); ++j) {
    REQUIRE(grads[j].size() == row.inputs[j].size());
    const Vec v = random_vec(static_cast<int64_t>(row.inputs[j].size()), rng);
    std::vector<Vec> plus = row.inputs, minus = row.inputs;
    for (size_t i = 0; i < v.size(); ++i) plus[j][i] += h * v[i], minus[j][i] -= h * v[i];
    const double numeric = (dot(row.forward(plus), r) - dot(row.forward(minus), r)) / (2 * h);
    const double analytic = dot(grads[j], v);
    INFO(row.name << ", input " << j << ": finite differences " << numeric << ", backward " << analytic);
    CHECK(std::abs(numeric - analytic) <= tol * std::max(1.0, std::abs(analytic)) + 1e-7);
  }
}

namespace gradient {

inline GradientRow conv(std::string name, ConvDesc d) {
  Rng rng(41);
  return {"conv " + name,
          ConvDesc::kOp,
          {random_vec(d.n * d.h * d.w * d.c, rng), random_vec(d.weight_numel(), rng), random_vec(d.k, rng)},
          [d](const std::vector<Vec>& in) { return ref::conv_forward(d, in[0], in[1], in[2]); },
          [d](const std::vector<Vec>& in, const Vec& dy) {
            Vec dw, db;
            ref::conv_backward_weights(d, in[0], dy, dw, db);
            return std::vector<Vec>{ref::conv_backward_data(d, dy, in[1]), dw, db};
          }};
}

inline GradientRow deconv(std::string name, DeconvDesc d) {
  Rng rng(43);
  return {"transposed conv " + name,
          DeconvDesc::kOp,
          {random_vec(d.n * d.h * d.w * d.c, rng), random_vec(d.c * d.kh * d.kw * d.k, rng), random_vec(d.k, rng)},
          [d](const std::vector<Vec>& in) { return ref::deconv_forward(d, in[0], in[1], in[2]); },
          [d](const std::vector<Vec>& in, const Vec& dy) {
            Vec dw, db;
            ref::deconv_backward_weights(d, in[0], dy, dw, db);
            return std::vector<Vec>{ref::deconv_backward_data(d, dy, in[1]), dw, db};
          }};
}

inline GradientRow fc(std::string name, FcDesc d) {
  Rng rng(47);
  return {"fc " + name,
          FcDesc::kOp,
          {random_vec(d.n * d.in, rng), random_vec(d.out * d.in, rng), random_vec(d.out, rng)},
          [d](const std::vector<Vec>& in) { return ref::fc_forward(d, in[0], in[1], in[2]); },
          [d](const std::vector<Vec>& in, const Vec& dy) {
            Vec dw, db;
            ref::fc_backward_weights(d, in[0], dy, dw, db);
            return std::vector<Vec>{ref::fc_backward_data(d, dy, in[1]), dw, db};
          }};
}

inline GradientRow pool(std::string name, PoolDesc d) {
  Rng rng(53);
  return {
      "pool " + name,
      PoolDesc::kOp,
      {random_vec(d.n * d.h * d.w * d.c, rng)},
      [d](const std::vector<Vec>& in) { return ref::pool_forward(d, in[0]); },
      [d](const std::vector<Vec>& in, const Vec& dy) { return std::vector<Vec>{ref::pool_backward(d, in[0], dy)}; }};
}

inline GradientRow batch_norm(std::string name, BatchNormDesc d) {
  Rng rng(59);
  return {
      "batch_norm " + name,
      BatchNormDesc::kOp,
      {random_vec(d.n * d.h * d.w * d.c, rng, -1.0, 3.0), random_vec(d.c, rng, 0.5, 1.5), random_vec(d.c, rng)},
      [d](const std::vector<Vec>& in) { return ref::bn_forward_training(d, in[0], in[1], in[2], nullptr, nullptr); },
      [d](const std::vector<Vec>& in, const Vec& dy) {
        Vec mean, var, dx, dscale, doffset;
        ref::bn_forward_training(d, in[0], in[1], in[2], &mean, &var);
        ref::bn_backward(d, in[0], dy, in[1], mean, var, dx, dscale, doffset);
        return std::vector<Vec>{dx, dscale, doffset};
      }};
}

// The fused op's reference is its three ops in turn (kernel_rows.h's agreement row).
inline GradientRow bn_relu_max_pool(std::string name, BnReluMaxPoolDesc d) {
  Rng rng(61);
  PoolDesc pd;
  pd.n = d.bn.n, pd.h = d.bn.h, pd.w = d.bn.w, pd.c = d.bn.c, pd.kh = d.kh, pd.kw = d.kw;
  pd.stride_h = d.stride_h, pd.stride_w = d.stride_w;
  const int64_t numel = d.bn.n * d.bn.h * d.bn.w * d.bn.c;
  auto normalized = [d](const std::vector<Vec>& in, Vec* mean, Vec* var) {
    return ref::act_forward({0, ActKind::kRelu}, ref::bn_forward_training(d.bn, in[0], in[1], in[2], mean, var));
  };
  return {
      "batch_norm_relu_max_pool " + name,
      BnReluMaxPoolDesc::kOp,
      {random_vec(numel, rng, -1.0, 3.0), random_vec(d.bn.c, rng, 0.5, 1.5), random_vec(d.bn.c, rng)},
      [pd, normalized](const std::vector<Vec>& in) { return ref::pool_forward(pd, normalized(in, nullptr, nullptr)); },
      [d, pd, normalized](const std::vector<Vec>& in, const Vec& dpooled) {
        Vec mean, var, dx, dscale, doffset;
        const Vec y = normalized(in, &mean, &var);
        Vec dy = ref::pool_backward(pd, y, dpooled);
        for (size_t i = 0; i < dy.size(); ++i)
          if (!(y[i] > 0)) dy[i] = 0;
        ref::bn_backward(d.bn, in[0], dy, in[1], mean, var, dx, dscale, doffset);
        return std::vector<Vec>{dx, dscale, doffset};
      }};
}

inline GradientRow lrn(std::string name, LrnDesc d) {
  Rng rng(67);
  return {"lrn " + name,
          LrnDesc::kOp,
          {random_vec(d.n * d.h * d.w * d.c, rng)},
          [d](const std::vector<Vec>& in) { return ref::lrn_forward(d, in[0]); },
          [d](const std::vector<Vec>& in, const Vec& dy) { return std::vector<Vec>{ref::lrn_backward(d, in[0], dy)}; }};
}

inline GradientRow act(std::string name, ActDesc d, double range = 3.0) {
  Rng rng(71);
  return {"activation " + name,
          ActDesc::kOp,
          {random_vec(d.numel, rng, -range, range)},
          [d](const std::vector<Vec>& in) { return ref::act_forward(d, in[0]); },
          [d](const std::vector<Vec>& in, const Vec& dy) { return std::vector<Vec>{ref::act_backward(d, in[0], dy)}; }};
}

inline GradientRow softmax(std::string name, int64_t rows, int64_t c) {
  Rng rng(73);
  return {"softmax " + name,
          SoftmaxDesc::kOp,
          {random_vec(rows * c, rng, -3.0, 3.0)},
          [rows, c](const std::vector<Vec>& in) { return ref::softmax_forward(rows, c, in[0]); },
          [rows, c](const std::vector<Vec>& in, const Vec& dy) {
            return std::vector<Vec>{ref::softmax_backward(rows, c, ref::softmax_forward(rows, c, in[0]), dy)};
          }};
}

inline GradientRow concat(std::string name, int64_t pixels, std::vector<int64_t> channels) {
  Rng rng(79);
  std::vector<Vec> xs;
  for (int64_t ch : channels) xs.push_back(random_vec(pixels * ch, rng));
  return {"concat " + name, ConcatDesc::kOp, xs,
          [pixels, channels](const std::vector<Vec>& in) { return ref::concat_forward(pixels, channels, in); },
          [pixels, channels](const std::vector<Vec>&, const Vec& dy) {
            return ref::concat_backward(pixels, channels, dy);
          }};
}

inline GradientRow layer_norm(std::string name, LayerNormDesc d) {
  Rng rng(83);
  return {"layer_norm " + name,
          LayerNormDesc::kOp,
          {random_vec(d.rows * d.length, rng, -1.0, 2.0), random_vec(d.c, rng, 0.5, 1.5), random_vec(d.c, rng)},
          [d](const std::vector<Vec>& in) { return ref::layer_norm_forward(d, in[0], in[1], in[2]); },
          [d](const std::vector<Vec>& in, const Vec& dy) {
            Vec dx, dscale, doffset;
            ref::layer_norm_backward(d, in[0], dy, in[1], dx, dscale, doffset);
            return std::vector<Vec>{dx, dscale, doffset};
          }};
}

inline GradientRow group_norm(std::string name, GroupNormDesc d) {
  Rng rng(97);
  return {"group_norm " + name,
          GroupNormDesc::kOp,
          {random_vec(d.numel(), rng, -1.0, 2.0), random_vec(d.c, rng, 0.5, 1.5), random_vec(d.c, rng)},
          [d](const std::vector<Vec>& in) { return ref::group_norm_forward(d, in[0], in[1], in[2]); },
          [d](const std::vector<Vec>& in, const Vec& dy) {
            Vec dx, dscale, doffset;
            ref::group_norm_backward(d, in[0], dy, in[1], dx, dscale, doffset);
            return std::vector<Vec>{dx, dscale, doffset};
          }};
}

// PReLU's inputs kept away from 0 (its kink): |x| >= 0.2.
inline GradientRow prelu(std::string name, PReluDesc d) {
  Rng rng(101);
  Vec x = random_vec(d.numel(), rng, -1.0, 1.0);
  for (double& v : x) v = v < 0 ? v - 0.2 : v + 0.2;
  return {"prelu " + name,
          PReluDesc::kOp,
          {x, random_vec(d.alphas, rng, -0.5, 0.8)},
          [d](const std::vector<Vec>& in) { return ref::prelu_forward(d, in[0], in[1]); },
          [d](const std::vector<Vec>& in, const Vec& dy) {
            Vec dx, dalpha;
            ref::prelu_backward(d, in[0], in[1], dy, dx, dalpha);
            return std::vector<Vec>{dx, dalpha};
          }};
}

inline GradientRow multiply(std::string name, ProductDesc d) {
  Rng rng(89);
  std::vector<Vec> xs;
  for (ProductDesc::Extent e : d.extents) xs.push_back(random_vec(d.values(e), rng));
  return {"multiply " + name, MultiplyKernel::kOp, xs,
          [d](const std::vector<Vec>& in) { return ref::multiply_forward(d, in); },
          [d](const std::vector<Vec>& in, const Vec& dy) {
            std::vector<Vec> g;
            for (size_t i = 0; i < in.size(); ++i) g.push_back(ref::multiply_backward(d, in, dy, i));
            return g;
          }};
}

inline GradientRow crop(std::string name, CropDesc d) {
  Rng rng(97);
  return {"crop2d " + name,
          Crop2dKernel::kOp,
          {random_vec(d.n * d.h * d.w * d.c, rng)},
          [d](const std::vector<Vec>& in) { return ref::crop2d_forward(d, in[0]); },
          [d](const std::vector<Vec>&, const Vec& dy) { return std::vector<Vec>{ref::crop2d_backward(d, dy)}; }};
}

inline GradientRow shuffle(std::string name, ChannelShuffleDesc d) {
  Rng rng(103);
  return {
      "channel_shuffle " + name,
      ChannelShuffleKernel::kOp,
      {random_vec(d.pixels * d.c, rng)},
      [d](const std::vector<Vec>& in) { return ref::channel_shuffle_forward(d, in[0]); },
      [d](const std::vector<Vec>&, const Vec& dy) { return std::vector<Vec>{ref::channel_shuffle_backward(d, dy)}; }};
}

inline GradientRow slice(std::string name, ChannelSliceDesc d) {
  Rng rng(107);
  return {"channel_slice " + name,
          ChannelSliceKernel::kOp,
          {random_vec(d.pixels * d.c, rng)},
          [d](const std::vector<Vec>& in) { return ref::channel_slice_forward(d, in[0]); },
          [d](const std::vector<Vec>&, const Vec& dy) { return std::vector<Vec>{ref::channel_slice_backward(d, dy)}; }};
}

// Unpooling scatters the pooled values to the positions the indices name (from a fixed x): its
// gradient gathers them back (Backend::max_unpool_backward).
inline GradientRow unpool(std::string name, PoolDesc d) {
  Rng rng(109);
  const std::vector<int32_t> idx = ref::max_pool_indices(d, random_vec(d.n * d.h * d.w * d.c, rng));
  return {"max_unpool " + name,
          MaxUnpoolKernel::kOp,
          {random_vec(d.n * d.out_h() * d.out_w() * d.c, rng)},
          [d, idx](const std::vector<Vec>& in) { return ref::max_unpool(d, in[0], idx); },
          [d, idx](const std::vector<Vec>&, const Vec& dy) {
            // The gather: dx[n, i, c] = dy[n, idx[n, i, c], c].
            const int64_t plane = d.h * d.w, outs = d.out_h() * d.out_w();
            Vec dx(idx.size());
            for (int64_t n = 0; n < d.n; ++n)
              for (int64_t i = 0; i < outs; ++i)
                for (int64_t c = 0; c < d.c; ++c) {
                  const size_t k = static_cast<size_t>((n * outs + i) * d.c + c);
                  dx[k] = dy[static_cast<size_t>((n * plane + idx[k]) * d.c + c)];
                }
            return std::vector<Vec>{dx};
          }};
}

inline GradientRow depth_to_space(std::string name, DepthToSpaceDesc d) {
  Rng rng(113);
  return {
      "depth_to_space " + name,
      DepthToSpaceDesc::kOp,
      {random_vec(d.numel(), rng)},
      [d](const std::vector<Vec>& in) { return ref::depth_to_space_forward(d, in[0]); },
      [d](const std::vector<Vec>&, const Vec& dy) { return std::vector<Vec>{ref::depth_to_space_backward(d, dy)}; }};
}

inline GradientRow adaptive_pool(std::string name, AdaptivePoolDesc d) {
  Rng rng(53);
  return {"adaptive_average_pool " + name,
          AdaptivePoolDesc::kOp,
          {random_vec(d.in_numel(), rng)},
          [d](const std::vector<Vec>& in) { return ref::adaptive_pool_forward(d, in[0]); },
          [d](const std::vector<Vec>&, const Vec& dy) { return std::vector<Vec>{ref::adaptive_pool_backward(d, dy)}; }};
}

inline GradientRow resize(std::string name, ResizeDesc d) {
  Rng rng(131);
  return {"resize " + name,
          ResizeDesc::kOp,
          {random_vec(d.x_numel(), rng)},
          [d](const std::vector<Vec>& in) { return ref::resize_forward(d, in[0]); },
          [d](const std::vector<Vec>&, const Vec& dy) { return std::vector<Vec>{ref::resize_backward(d, dy)}; }};
}

inline GradientRow batch_broadcast(std::string name, BatchBroadcastDesc d) {
  Rng rng(127);
  return {"batch_broadcast " + name,
          BatchBroadcastDesc::kOp,
          {random_vec(d.rows * d.length, rng), random_vec(d.length, rng)},
          [d](const std::vector<Vec>& in) { return ref::batch_broadcast_add(d, in[0], in[1]); },
          [d](const std::vector<Vec>&, const Vec& dy) {
            return std::vector<Vec>{dy, ref::batch_sum(d, dy)};
          }};
}

inline GradientRow spatial_transpose(std::string name, SpatialTransposeDesc d) {
  Rng rng(137);
  return {
      "spatial_transpose " + name,
      SpatialTransposeDesc::kOp,
      {random_vec(d.numel(), rng)},
      [d](const std::vector<Vec>& in) { return ref::spatial_transpose_forward(d, in[0]); },
      [d](const std::vector<Vec>&, const Vec& dy) { return std::vector<Vec>{ref::spatial_transpose_backward(d, dy)}; }};
}

inline GradientRow row_gather(std::string name, RowGatherDesc d) {
  Rng rng(139);
  return {"row_gather " + name,
          RowGatherDesc::kOp,
          {random_vec(d.n * d.rows_in * d.cols, rng)},
          [d](const std::vector<Vec>& in) { return ref::row_gather_forward(d, in[0]); },
          [d](const std::vector<Vec>&, const Vec& dy) { return std::vector<Vec>{ref::row_gather_backward(d, dy)}; }};
}

// x and the head factor t (a logit scale: one head past the clamp, where its gradient is 0).
inline GradientRow head_normalize(std::string name, HeadNormalizeDesc d) {
  Rng rng(149);
  Vec t = random_vec(d.heads, rng, 1.0, 4.0);
  t.back() = 5.0;
  return {"head_normalize " + name,
          HeadNormalizeDesc::kOp,
          {random_vec(d.numel(), rng, -2.0, 2.0), t},
          [d](const std::vector<Vec>& in) { return ref::head_normalize_forward(d, in[0], in[1]); },
          [d](const std::vector<Vec>& in, const Vec& dy) {
            Vec dx, dt;
            ref::head_normalize_backward(d, in[0], in[1], dy, dx, dt);
            return std::vector<Vec>{dx, dt};
          }};
}

// x with fixed tables (any values: not only a rotation's), whose gradients the op does not give.
inline GradientRow rotary(std::string name, RotaryDesc d) {
  Rng rng(151);
  const Vec c = random_vec(d.table_numel(), rng, -1.5, 1.5), s = random_vec(d.table_numel(), rng, -1.5, 1.5);
  return {
      "rotary " + name,
      RotaryDesc::kOp,
      {random_vec(d.numel(), rng, -2.0, 2.0)},
      [d, c, s](const std::vector<Vec>& in) { return ref::rotary(d, in[0], c, s); },
      [d, c, s](const std::vector<Vec>&, const Vec& dy) { return std::vector<Vec>{ref::rotary(d, dy, c, s, true)}; }};
}

// Queries in [-2, 2) (a softmax far from uniform), keys and values either side of 0 (the relu).
inline GradientRow separable_attention(std::string name, SeparableAttentionDesc d) {
  Rng rng(157);
  return {"separable_attention " + name,
          SeparableAttentionDesc::kOp,
          {random_vec(d.x_numel(), rng, -2.0, 2.0)},
          [d](const std::vector<Vec>& in) { return ref::separable_attention_forward(d, in[0]); },
          [d](const std::vector<Vec>& in, const Vec& dy) {
            return std::vector<Vec>{ref::separable_attention_backward(d, in[0], dy)};
          }};
}

// Queries, keys and values either side of 0 (the ReLUs), none within 0.05 of it (the finite
// differences' steps stay on one side of the kink).
inline GradientRow linear_attention(std::string name, LinearAttentionDesc d) {
  Rng rng(163);
  Vec x = random_vec(d.x_numel(), rng, -2.0, 2.0);
  for (double& v : x)
    if (std::abs(v) < 0.05) v += v < 0 ? -0.05 : 0.05;
  return {"linear_attention " + name,
          LinearAttentionDesc::kOp,
          {x},
          [d](const std::vector<Vec>& in) { return ref::linear_attention_forward(d, in[0]); },
          [d](const std::vector<Vec>& in, const Vec& dy) {
            return std::vector<Vec>{ref::linear_attention_backward(d, in[0], dy)};
          }};
}

// Q and K in [-2, 2) (a softmax far from uniform). With d.dropout: one fixed mask; with
// d.bias_n: the bias in [-1, 1), a fourth input.
inline GradientRow attention(std::string name, AttentionDesc d) {
  Rng rng(131);
  Vec q = random_vec(d.q_numel(), rng, -2.0, 2.0), k = random_vec(d.k_numel(), rng, -2.0, 2.0);
  const bool drop = d.dropout > 0.f;
  const uint64_t key = 77;
  std::vector<Vec> inputs{q, k, random_vec(d.v_numel(), rng)};
  if (d.bias_n > 0) inputs.push_back(random_vec(d.bias_numel(), rng));
  // With talking heads: the packed head mixes (reference_attention.h), the last input.
  if (d.talking_heads)
    inputs.push_back(random_vec(2 * d.heads * d.heads + d.heads + d.mix_bias_numel(1), rng, -1.0, 1.0));
  const size_t mix_at = inputs.size() - 1;
  return {"attention " + name, AttentionDesc::kOp, inputs,
          [d, drop, mix_at](const std::vector<Vec>& in) {
            return ref::attention_forward(d, in[0], in[1], in[2], drop, key, d.bias_n > 0 ? &in[3] : nullptr,
                                          d.talking_heads ? &in[mix_at] : nullptr);
          },
          [d, drop, mix_at](const std::vector<Vec>& in, const Vec& dy) {
            Vec dq, dk, dv, db, dmix;
            const bool biased = d.bias_n > 0;
            ref::attention_backward(d, in[0], in[1], in[2], dy, dq, dk, dv, drop, key, biased ? &in[3] : nullptr,
                                    biased ? &db : nullptr, d.talking_heads ? &in[mix_at] : nullptr,
                                    d.talking_heads ? &dmix : nullptr);
            std::vector<Vec> grads{dq, dk, dv};
            if (biased) grads.push_back(db);
            if (d.talking_heads) grads.push_back(dmix);
            return grads;
          }};
}

// A loss is one output, the mean loss: its backward scales the reference's gradient (with
// respect to the outputs, or to the logits before the sigmoid or softmax) by dy[0].
inline Vec scaled(Vec g, double s) {
  for (double& v : g) v *= s;
  return g;
}

inline GradientRow regression_loss(std::string name, LossKind kind, int64_t n, int64_t r, double delta = 1.0) {
  Rng rng(127);
  const Vec t = random_vec(n * r, rng, -2.0, 2.0);
  auto loss = [=](const Vec& y) { return ref::regression_loss(kind, n, y, t, delta); };
  return {
      "regression_loss " + name,
      RegressionLossKernel::kOp,
      {random_vec(n * r, rng, -2.0, 2.0)},
      [loss](const std::vector<Vec>& in) { return Vec{loss(in[0]).loss}; },
      [loss](const std::vector<Vec>& in, const Vec& dy) { return std::vector<Vec>{scaled(loss(in[0]).grad, dy[0])}; }};
}

inline GradientRow binary_cross_entropy(std::string name, int64_t n, int64_t c) {
  Rng rng(131);
  Vec t(static_cast<size_t>(n * c));
  for (double& v : t) v = static_cast<double>(rng.below(2));
  auto loss = [=](const Vec& logits) {
    Vec p(logits);
    for (double& v : p) v = 1 / (1 + std::exp(-v));
    return ref::binary_cross_entropy(n, p, t);
  };
  return {
      "binary_cross_entropy " + name,
      BinaryCrossEntropyKernel::kOp,
      {random_vec(n * c, rng, -3.0, 3.0)},
      [loss](const std::vector<Vec>& in) { return Vec{loss(in[0]).loss}; },
      [loss](const std::vector<Vec>& in, const Vec& dy) { return std::vector<Vec>{scaled(loss(in[0]).grad, dy[0])}; }};
}

// Labels of rows x c with a few -1 (undefined).
inline std::vector<int32_t> some_labels(int64_t rows, int64_t c, Rng& rng) {
  std::vector<int32_t> labels(static_cast<size_t>(rows));
  for (int32_t& l : labels) l = rng.below(5) == 0 ? -1 : static_cast<int32_t>(rng.below(static_cast<uint64_t>(c)));
  return labels;
}

inline GradientRow generalized_dice(std::string name, int64_t images, int64_t pixels, int64_t c) {
  Rng rng(137);
  const int64_t rows = images * pixels;
  const std::vector<int32_t> labels = some_labels(rows, c, rng);
  auto loss = [=](const Vec& logits) {
    return ref::generalized_dice(images, c, ref::softmax_forward(rows, c, logits), labels);
  };
  return {
      "generalized_dice " + name,
      GeneralizedDiceKernel::kOp,
      {random_vec(rows * c, rng, -2.0, 2.0)},
      [loss](const std::vector<Vec>& in) { return Vec{loss(in[0]).loss}; },
      [loss](const std::vector<Vec>& in, const Vec& dy) { return std::vector<Vec>{scaled(loss(in[0]).grad, dy[0])}; }};
}

inline GradientRow tversky(std::string name, int64_t images, int64_t pixels, int64_t c, double alpha, double beta) {
  Rng rng(149);
  const int64_t rows = images * pixels;
  const std::vector<int32_t> labels = some_labels(rows, c, rng);
  auto loss = [=](const Vec& logits) {
    return ref::tversky(images, c, ref::softmax_forward(rows, c, logits), labels, alpha, beta);
  };
  return {
      "tversky " + name,
      TverskyKernel::kOp,
      {random_vec(rows * c, rng, -2.0, 2.0)},
      [loss](const std::vector<Vec>& in) { return Vec{loss(in[0]).loss}; },
      [loss](const std::vector<Vec>& in, const Vec& dy) { return std::vector<Vec>{scaled(loss(in[0]).grad, dy[0])}; }};
}

inline GradientRow focal_cross_entropy(std::string name, int64_t n, int64_t c, double gamma, double alpha,
                                       bool weighted) {
  Rng rng(139);
  const std::vector<int32_t> labels = some_labels(n, c, rng);
  const Vec weights = weighted ? random_vec(c, rng, 0.2, 3.0) : Vec{};
  auto loss = [=](const Vec& logits) {
    return ref::focal_cross_entropy(c, ref::softmax_forward(n, c, logits), labels, gamma, alpha, weights);
  };
  return {
      "focal_cross_entropy " + name,
      FocalCrossEntropyKernel::kOp,
      {random_vec(n * c, rng, -3.0, 3.0)},
      [loss](const std::vector<Vec>& in) { return Vec{loss(in[0]).loss}; },
      [loss](const std::vector<Vec>& in, const Vec& dy) { return std::vector<Vec>{scaled(loss(in[0]).grad, dy[0])}; }};
}

}  // namespace gradient

inline std::vector<GradientRow> gradient_rows() {
  using namespace gradient;
  std::vector<GradientRow> rows;
  ConvDesc c;
  c.n = 2, c.h = 7, c.w = 6, c.c = 3, c.k = 4, c.kh = c.kw = 3, c.pad_t = c.pad_b = c.pad_l = c.pad_r = 1;
  rows.push_back(conv("3x3 pad 1", c));
  c.stride_h = c.stride_w = 2, c.pad_b = 0, c.dilation_h = 2;
  rows.push_back(conv("3x3 stride 2 dilation 2x1 asymmetric padding", c));
  c = ConvDesc{};
  c.n = 2, c.h = 6, c.w = 5, c.c = 6, c.k = 6, c.kh = c.kw = 3, c.groups = 3, c.pad_t = c.pad_l = 1;
  rows.push_back(conv("3 groups", c));
  DeconvDesc dd;
  dd.n = 2, dd.h = 4, dd.w = 3, dd.c = 3, dd.k = 2, dd.kh = 4, dd.kw = 3, dd.stride_h = dd.stride_w = 2;
  dd.crop_t = 1, dd.crop_b = 2, dd.crop_r = 1;
  rows.push_back(deconv("4x3/2 asymmetric crop", dd));
  rows.push_back(fc("24->5", {3, 24, 5, false, false}));
  PoolDesc p;
  p.n = 2, p.h = 7, p.w = 9, p.c = 3, p.kh = p.kw = 3, p.stride_h = p.stride_w = 2, p.pad_t = 1, p.pad_r = 2;
  p.kind = PoolKind::kAverage;
  rows.push_back(pool("average 3x3/2 asymmetric padding", p));
  p.exclude_padding = true;
  rows.push_back(pool("average 3x3/2 asymmetric padding left out of the divisor", p));
  p.exclude_padding = false;
  p.kind = PoolKind::kMax;
  rows.push_back(pool("max 3x3/2 asymmetric padding", p));
  rows.push_back(batch_norm("odd sizes", {3, 4, 3, 5, 1e-5f, false}));
  BnReluMaxPoolDesc f;
  f.bn = {2, 6, 5, 4, 1e-5f, false};
  f.kh = f.kw = 3, f.stride_h = f.stride_w = 2;
  rows.push_back(bn_relu_max_pool("3x3/2", f));
  rows.push_back(lrn("size 5", {2, 3, 2, 9, 5, 0.5f, 0.75f, 1.f}));
  for (auto [kind, alpha, beta, name] : std::vector<std::tuple<ActKind, float, float, const char*>>{
           {ActKind::kRelu, 0.f, 0.f, "relu"},
           {ActKind::kLeakyRelu, 0.1f, 0.f, "leaky relu"},
           {ActKind::kElu, 0.7f, 0.f, "elu"},
           {ActKind::kClippedRelu, 1.5f, 0.f, "clipped relu"},
           {ActKind::kSigmoid, 0.f, 0.f, "sigmoid"},
           {ActKind::kTanh, 0.f, 0.f, "tanh"},
           {ActKind::kSwish, 0.f, 0.f, "swish"},
           {ActKind::kGelu, 0.f, 0.f, "gelu"},
           {ActKind::kGeluTanh, 0.f, 0.f, "gelu tanh"},
           {ActKind::kHardSigmoid, 1.f / 6, 0.5f, "hard sigmoid"},
           {ActKind::kHardSwish, 0.f, 0.f, "hard swish"}})
    rows.push_back(act(name, {300, kind, alpha, beta}, 4.0));
  rows.push_back(softmax("6x7", 6, 7));
  rows.push_back(concat("3+5+1", 6, {3, 5, 1}));
  rows.push_back(layer_norm("channel-only 10x6", {10, 6, 6, 1e-5f}));
  rows.push_back(layer_norm("spatial-channel 2 images of 3x2x4", {2, 24, 4, 1e-5f}));
  rows.push_back(group_norm("3 groups of 2, 2 images of 2x2", {2, 4, 6, 3, 1e-5f}));
  rows.push_back(prelu("shared alpha, 2 images of 3x4", {2, 3, 4, 1}));
  rows.push_back(prelu("alpha per channel, 2 images of 3x4", {2, 3, 4, 4}));
  rows.push_back(group_norm("instance: 4 groups of 1, 2 images of 3", {2, 3, 4, 4, 1e-5f}));
  rows.push_back(multiply("squeeze-and-excitation, 3 inputs",
                          {2, 6, 4, {ProductDesc::kChannels, ProductDesc::kFull, ProductDesc::kFull}}));
  rows.push_back(multiply("a value per pixel, and the outer product of one per channel",
                          {2, 6, 4, {ProductDesc::kPixels, ProductDesc::kFull, ProductDesc::kChannels}}));
  CropDesc cr;
  cr.n = 2, cr.h = 6, cr.w = 5, cr.c = 3, cr.out_h = 3, cr.out_w = 4, cr.top = 2, cr.left = 1;
  rows.push_back(crop("6x5 -> 3x4 at (2, 1)", cr));
  rows.push_back(shuffle("3 groups of 4", {10, 12, 3}));
  rows.push_back(slice("middle 3 of 7", {10, 7, 2, 3}));
  PoolDesc u;
  u.n = 2, u.h = 6, u.w = 8, u.c = 3, u.kh = u.kw = 2, u.stride_h = u.stride_w = 2;
  rows.push_back(unpool("2x2/2", u));
  rows.push_back(depth_to_space("DCR 2x3", {2, 3, 2, 12, 2, 3, false}));
  rows.push_back(depth_to_space("CRD 2", {2, 2, 3, 8, 2, 2, true}));
  rows.push_back(adaptive_pool("5x7 -> 3x4", {2, 5, 7, 2, 3, 4}));
  rows.push_back(resize("bilinear 3x4 -> 5x7", ref::resize_desc(2, 3, 4, 2, 5, 7, true, true, false)));
  rows.push_back(resize("nearest 4x3 -> 2x5, floor", ref::resize_desc(2, 4, 3, 2, 2, 5, false, false, true)));
  rows.push_back(resize("bilinear 3x4 -> 5x6, align corners",
                        ref::aligned_resize(ref::resize_desc(2, 3, 4, 2, 5, 6, true, true, false))));
  rows.push_back(resize("bicubic 4x3 -> 6x2, align corners", ref::aligned_resize(ref::cubic_resize(ref::resize_desc(
                                                                 1, 4, 3, 2, 6, 2, false, true, false)))));
  rows.push_back(
      resize("bicubic 5x4 -> 3x7", ref::cubic_resize(ref::resize_desc(2, 5, 4, 2, 3, 7, false, true, false))));
  rows.push_back(batch_broadcast("3 rows of 4", {3, 4}));
  rows.push_back(spatial_transpose("2x3x2x2", {2, 3, 2, 2}));
  rows.push_back(spatial_transpose("2x3x5x1 (one value per pixel)", {2, 3, 5, 1}));
  rows.push_back(
      row_gather("2 blocks of 4 rows to 6 (a zero row, a row taken twice)", {2, 4, 6, 3, {3, -1, 0, 3, 1, 2}}));
  rows.push_back(head_normalize("3 rows of 2 heads of 4, logit scale", {3, 2, 4}));
  rows.push_back(head_normalize("2 rows of 2 heads of 3 groups of 4, linear factor", {2, 2, 4, 4.6, 3, true}));
  rows.push_back(rotary("interleaved, 2 sequences of 4 tokens (1 prefix), 2 heads of 6", {2, 4, 2, 6, 1, false}));
  rows.push_back(rotary("half, 1 sequence of 3 tokens, 3 heads of 4", {1, 3, 3, 4, 0, true}));
  rows.push_back(
      rotary("a table per head, 2 sequences of 3 tokens (1 prefix), 2 heads of 4", {2, 3, 2, 4, 1, false, 2}));
  rows.push_back(separable_attention("2 images of 4x6, 2x2 patches, 3 channels", {2, 4, 6, 3, 2, 2}));
  rows.push_back(separable_attention("1 image of 3x4, 1x2 patches, 2 channels", {1, 3, 4, 2, 1, 2}));
  rows.push_back(linear_attention("2 images of 5 tokens, 2 heads of 3", {2, 5, 2, 3, 1e-5f}));
  rows.push_back(linear_attention("1 image of 4 tokens, 1 head of 1, eps 0.5", {1, 4, 1, 1, 0.5f}));
  rows.push_back(attention("2 heads, 3 queries over 4 keys, key dim 3 value dim 2", {2, 2, 3, 4, 3, 2, false, 0.f}));
  rows.push_back(attention("causal, 2 heads of 5 tokens", {1, 2, 5, 5, 3, 3, true, 0.f}));
  rows.push_back(attention("causal, 4 queries over 2 keys, scale 0.7", {1, 1, 4, 2, 2, 3, true, 0.7f}));
  AttentionDesc dropout{1, 2, 4, 5, 3, 2, false, 0.f};
  dropout.dropout = 0.4f;
  rows.push_back(attention("dropout 0.4, 2 heads, 4 queries over 5 keys", dropout));
  AttentionDesc biased{4, 2, 3, 3, 2, 2, false, 0.f};
  biased.bias_n = 2;  // 2 images of 2 windows, a bias per window
  rows.push_back(attention("bias per window, 4 entries of 2 heads of 3 tokens", biased));
  AttentionDesc talking{2, 3, 3, 4, 2, 2, false, 0.f};
  talking.talking_heads = true;
  rows.push_back(attention("talking heads, 3 heads, 3 queries over 4 keys", talking));
  AttentionDesc talking_all{4, 2, 3, 3, 2, 2, true, 0.6f};
  talking_all.talking_heads = true;
  talking_all.bias_n = 2;
  talking_all.dropout = 0.3f;
  rows.push_back(attention("talking heads, causal, bias per window, dropout 0.3", talking_all));
  AttentionDesc pairs{2, 2, 3, 4, 2, 2, true, 0.f};
  pairs.talking_heads = true;
  pairs.pair_probs_bias = true;
  rows.push_back(attention("talking heads, a bias per head and pair on the probabilities, causal", pairs));
  rows.push_back(regression_loss("mse 4x3", LossKind::kMse, 4, 3));
  rows.push_back(regression_loss("mae 4x3", LossKind::kMae, 4, 3));
  rows.push_back(regression_loss("huber delta 1, 5x4 (both sides)", LossKind::kHuber, 5, 4));
  rows.push_back(regression_loss("huber delta 0.3, 5x4", LossKind::kHuber, 5, 4, 0.3));
  rows.push_back(binary_cross_entropy("4x5", 4, 5));
  rows.push_back(generalized_dice("2 images of 6 pixels, 4 classes, undefined", 2, 6, 4));
  rows.push_back(tversky("alpha 0.3 beta 0.7, 2 images of 6 pixels, 4 classes, undefined", 2, 6, 4, 0.3, 0.7));
  rows.push_back(tversky("alpha 1 beta 0.2, 3 images of 4 pixels, 3 classes", 3, 4, 3, 1.0, 0.2));
  rows.push_back(focal_cross_entropy("gamma 2 alpha 0.25, 8x5, undefined", 8, 5, 2.0, 0.25, false));
  rows.push_back(focal_cross_entropy("gamma 0.7 alpha 0.5, weighted", 8, 5, 0.7, 0.5, true));
  return rows;
}

}  // namespace dlt::test
