// Agreement rows of the light kernels (kernel_kinds.h; the losses in loss_rows.h) and of the
// fused batch norm + ReLU + max pooling op: each against a double-precision formula written
// here, or exactly where the kernel only moves or scales values. Part of agreement_rows() (op_agreement.h).
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "backend/adaptive_pool_op.h"
#include "backend/backend.h"
#include "backend/depth_to_space_op.h"
#include "backend/dropout_hash.h"
#include "backend/kernel_kinds.h"
#include "backend/linear_attention_op.h"
#include "backend/loss_rows.h"
#include "backend/resize_op.h"
#include "backend/separable_attention_op.h"
#include "backend/token_ops.h"
#include "support/reference_ops.h"
#include "support/tensor_utils.h"

namespace dlt::test {
namespace agreement {

// Moves a host vector to the backend's device as a tensor of shape s.
inline Tensor on_device(const Vec& v, const Shape& s, const Backend& be) { return to_tensor(v, s, be.device()); }

inline void check_exact(const char* what, const Tensor& got, const Vec& want) {
  const Vec g = to_vec(got);
  REQUIRE(g.size() == want.size());
  int64_t differ = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] != want[i]) ++differ;
  INFO(what << ": " << differ << " of " << g.size() << " values differ");
  CHECK(differ == 0);
}

// fill, copy, scale, clamp, axpby, sum, multiply (same size): one row per kernel, n values.
inline std::vector<AgreementRow> elementwise_rows(int64_t n) {
  const std::string at = " " + std::to_string(n);
  std::vector<AgreementRow> rows;
  rows.push_back({"fill" + at, {FillKernel::kOp}, [n](Backend& be, double) {
                    Tensor t(Shape{n}, be.device());
                    be.fill(t, -2.5f);
                    check_exact("fill", t, Vec(static_cast<size_t>(n), -2.5));
                  }});
  rows.push_back({"copy" + at, {CopyKernel::kOp}, [n](Backend& be, double) {
                    Rng rng(3);
                    const Vec x = random_vec(n, rng);
                    Tensor src = on_device(x, {n}, be), dst(Shape{n}, be.device());
                    be.copy(src, dst);
                    check_exact("copy", dst, x);
                  }});
  rows.push_back({"scale and clamp" + at, {ScaleKernel::kOp, ClampKernel::kOp}, [n](Backend& be, double tol) {
                    Rng rng(5);
                    const Vec x = random_vec(n, rng, -3.0, 3.0);
                    Tensor t = on_device(x, {n}, be);
                    be.scale(t, 1.5f);
                    Vec want(x);
                    for (double& v : want) v = static_cast<float>(v) * 1.5f;
                    check_close("scale", t, want, tol);
                    be.clamp(t, -1.f, 2.f);
                    for (double& v : want) v = std::min(std::max(v, -1.0), 2.0);
                    check_close("clamp", t, want, tol);
                  }});
  rows.push_back({"axpby" + at, {AxpbyKernel::kOp}, [n](Backend& be, double tol) {
                    Rng rng(7);
                    const Vec x = random_vec(n, rng), y = random_vec(n, rng);
                    Tensor tx = on_device(x, {n}, be), ty = on_device(y, {n}, be);
                    be.axpby(0.7f, tx, -1.3f, ty);
                    Vec want(y.size());
                    for (size_t i = 0; i < y.size(); ++i) want[i] = 0.7 * x[i] - 1.3 * y[i];
                    check_close("axpby", ty, want, tol);
                    // b == 0 does not read y (NaN stays out).
                    Tensor tn = on_device(Vec(static_cast<size_t>(n), std::nan("")), {n}, be);
                    be.axpby(2.f, tx, 0.f, tn);
                    for (size_t i = 0; i < x.size(); ++i) want[i] = 2.0 * x[i];
                    check_close("axpby b = 0", tn, want, tol);
                  }});
  rows.push_back({"sum of 3 and of 1" + at, {SumKernel::kOp}, [n](Backend& be, double tol) {
                    Rng rng(9);
                    const Vec a = random_vec(n, rng), b = random_vec(n, rng), c = random_vec(n, rng);
                    Tensor ta = on_device(a, {n}, be), tb = on_device(b, {n}, be), tc = on_device(c, {n}, be);
                    Tensor y(Shape{n}, be.device());
                    be.sum({&ta, &tb, &tc}, y);
                    Vec want(a.size());
                    for (size_t i = 0; i < a.size(); ++i) want[i] = a[i] + b[i] + c[i];
                    check_close("sum", y, want, tol);
                    be.sum({&tb}, y);
                    check_exact("sum of one", y, b);
                  }});
  rows.push_back({"multiply same size" + at, {MultiplySameSizeKernel::kOp}, [n](Backend& be, double tol) {
                    Rng rng(11);
                    const Vec x = random_vec(n, rng), m = random_vec(n, rng);
                    Tensor tx = on_device(x, {n}, be), tm = on_device(m, {n}, be), y(Shape{n}, be.device());
                    be.multiply(tx, tm, y);
                    Vec want(x.size());
                    for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] * m[i];
                    check_close("multiply", y, want, tol);
                  }});
  return rows;
}

// sum_squares, l2_norm_into (fresh and accumulated) and clip_to_norm on two tensors of n and m.
inline AgreementRow norm_row(int64_t n, int64_t m) {
  return {"sum_squares, l2_norm_into, clip_to_norm " + std::to_string(n) + " + " + std::to_string(m),
          {SumSquaresKernel::kOp, L2NormIntoKernel::kOp, ClipToNormKernel::kOp},
          [n, m](Backend& be, double tol) {
            Rng rng(13);
            const Vec a = random_vec(n, rng, -2.0, 2.0), b = random_vec(m, rng, -2.0, 2.0);
            double sa = 0, sb = 0;
            for (double v : a) sa += v * v;
            for (double v : b) sb += v * v;
            Tensor ta = on_device(a, {n}, be), tb = on_device(b, {m}, be);
            CHECK(be.sum_squares(ta) == Approx(sa).epsilon(tol));
            Tensor norms = on_device(Vec{7.0, 0.0}, {2}, be);
            be.l2_norm_into(ta, norms, 1, false);
            be.l2_norm_into(tb, norms, 1, true);
            check_close("norms", norms, Vec{7.0, std::sqrt(sa + sb)}, tol);
            // A threshold below the norm scales by threshold / norm; one above leaves it.
            const double threshold = 0.5 * std::sqrt(sa + sb);
            be.clip_to_norm(ta, norms, 1, threshold);
            Vec want(a);
            for (double& v : want) v *= threshold / std::sqrt(sa + sb);
            check_close("clipped", ta, want, tol);
            be.clip_to_norm(tb, norms, 0, 1e30);
            check_exact("not clipped", tb, b);
          }};
}

// y = (x - shift) * mul with shift of ns and mul of nm values repeating (mul undefined: 1).
inline AgreementRow shift_scale_row(int64_t n, int64_t ns, int64_t nm) {
  return {"shift_scale " + std::to_string(n) + " by " + std::to_string(ns) + " and " + std::to_string(nm),
          {ShiftScaleKernel::kOp},
          [n, ns, nm](Backend& be, double tol) {
            Rng rng(17);
            const Vec x = random_vec(n, rng), s = random_vec(ns, rng), m = random_vec(nm, rng, 0.5, 2.0);
            Tensor tx = on_device(x, {n}, be), ts = on_device(s, {ns}, be), y(Shape{n}, be.device());
            Tensor tm = nm > 0 ? on_device(m, {nm}, be) : Tensor();
            be.shift_scale(tx, ts, tm, y);
            Vec want(x.size());
            for (int64_t i = 0; i < n; ++i)
              want[static_cast<size_t>(i)] = (x[static_cast<size_t>(i)] - s[static_cast<size_t>(i % ns)]) *
                                             (nm > 0 ? m[static_cast<size_t>(i % nm)] : 1.0);
            check_close("shift_scale", y, want, tol);
          }};
}

// The mask is the hash's (dropout_hash.h) for the key Backend derives: kept values scaled by
// 1 / (1 - p), about a fraction p dropped, y = x * mask exactly.
inline AgreementRow dropout_row(int64_t n, float p) {
  return {
      "dropout " + std::to_string(n) + " p " + std::to_string(p), {DropoutKernel::kOp}, [n, p](Backend& be, double) {
        Rng rng(19);
        const Vec x = random_vec(n, rng);
        Tensor tx = on_device(x, {n}, be), y(Shape{n}, be.device()), mask(Shape{n}, be.device());
        be.dropout_forward(tx, y, mask, p, 42, 3);
        const Vec mv = to_vec(mask), yv = to_vec(y);
        const float keep = 1.f / (1.f - p);
        int64_t dropped = 0, bad = 0;
        for (size_t i = 0; i < mv.size(); ++i) {
          if (mv[i] == 0) ++dropped;
          if (!(mv[i] == 0 || mv[i] == keep)) ++bad;
          if (yv[i] != static_cast<double>(static_cast<float>(x[i]) * static_cast<float>(mv[i]))) ++bad;
        }
        CHECK(bad == 0);
        const double sd = std::sqrt(n * p * (1 - p));
        CHECK(std::abs(dropped - n * p) < 5 * sd);
        // The same (seed, stream) draws the same mask; another stream another one.
        Tensor mask2(Shape{n}, be.device());
        be.dropout_forward(tx, y, mask2, p, 42, 3);
        check_exact("same mask", mask2, mv);
        be.dropout_forward(tx, y, mask2, p, 42, 4);
        CHECK(to_vec(mask2) != mv);
      }};
}

// Per-channel mean and biased variance over the positions of x (positions x c), and the
// synchronized batch norm's gradient correction.
inline AgreementRow channel_moments_row(int64_t positions, int64_t c) {
  return {"channel_moments, batch_norm_dx_correction " + std::to_string(positions) + "x" + std::to_string(c),
          {ChannelMomentsKernel::kOp, BatchNormDxCorrectionKernel::kOp},
          [positions, c](Backend& be, double tol) {
            Rng rng(23);
            const Vec x = random_vec(positions * c, rng, 1.0, 3.0);
            Tensor tx = on_device(x, {positions, c}, be), mean(Shape{c}, be.device()), var(Shape{c}, be.device());
            be.channel_moments(tx, mean, var);
            Vec wm(static_cast<size_t>(c), 0.0), wv(static_cast<size_t>(c), 0.0);
            for (int64_t p = 0; p < positions; ++p)
              for (int64_t j = 0; j < c; ++j)
                wm[static_cast<size_t>(j)] += x[static_cast<size_t>(p * c + j)] / positions;
            for (int64_t p = 0; p < positions; ++p)
              for (int64_t j = 0; j < c; ++j) {
                const double d = x[static_cast<size_t>(p * c + j)] - wm[static_cast<size_t>(j)];
                wv[static_cast<size_t>(j)] += d * d / positions;
              }
            check_close("mean", mean, wm, tol);
            check_close("var", var, wv, tol);
            // dx[., c] -= scale[c] / (sigma[c] * m) * (dshift[c] + xhat * dscale[c]).
            const Vec scale = random_vec(c, rng, 0.5, 1.5), dshift = random_vec(c, rng), dscale = random_vec(c, rng);
            const Vec dx0 = random_vec(positions * c, rng);
            const float eps = 1e-3f;
            const double m = 2.0 * positions;
            Tensor tdx = on_device(dx0, {positions, c}, be);
            be.batch_norm_dx_correction(tx, mean, var, on_device(scale, {c}, be), eps, m, on_device(dshift, {c}, be),
                                        on_device(dscale, {c}, be), tdx);
            const Vec gm = to_vec(mean), gv = to_vec(var);
            Vec want(dx0);
            for (int64_t p = 0; p < positions; ++p)
              for (int64_t j = 0; j < c; ++j) {
                const size_t i = static_cast<size_t>(p * c + j), k = static_cast<size_t>(j);
                const double sigma = std::sqrt(gv[k] + eps), xhat = (x[i] - gm[k]) / sigma;
                want[i] -= scale[k] / (sigma * m) * (dshift[k] + xhat * dscale[k]);
              }
            check_close("dx corrected", tdx, want, tol);
          }};
}

// One step of each solver against its formula (backend/solver.h), with L2, adamw's decay and step t.
inline AgreementRow optimizer_row(Solver solver, int64_t n) {
  const char* names[] = {"sgdm", "adam", "rmsprop", "adamw"};
  return {std::string("optimizer_update ") + names[static_cast<int>(solver)] + " " + std::to_string(n),
          {OptimizerUpdateKernel::kOp},
          [solver, n](Backend& be, double tol) {
            Rng rng(29);
            const Vec w = random_vec(n, rng), g = random_vec(n, rng), m = random_vec(n, rng),
                      s = random_vec(n, rng, 0.1, 1.0);
            UpdateRule r;
            r.solver = solver;
            r.momentum = 0.8f, r.b1 = 0.85f, r.b2 = 0.95f, r.eps = 1e-6f, r.l2 = 0.01f, r.wd = 0.3f;
            const float lr = 0.05f;
            const int64_t t = 3;
            Tensor tw = on_device(w, {n}, be), tg = on_device(g, {n}, be), tm = on_device(m, {n}, be),
                   ts = on_device(s, {n}, be);
            be.optimizer_update(r, StepScalars::at_step(r, lr, t), tw, tg, tm, ts);
            Vec ww(w), wm(m), ws(s);
            const double c1 = 1 / (1 - std::pow(double{r.b1}, t)), c2 = 1 / (1 - std::pow(double{r.b2}, t));
            for (size_t i = 0; i < w.size(); ++i) {
              const double gi = g[i] + r.l2 * w[i];
              if (solver == Solver::kSgdm) {
                wm[i] = r.momentum * m[i] - lr * gi;
                ww[i] = w[i] + wm[i];
              } else if (adam_family(solver)) {  // adam reads no wd
                const double keep = solver == Solver::kAdamW ? 1 - double{lr} * r.wd : 1;
                wm[i] = r.b1 * m[i] + (1 - r.b1) * gi;
                ws[i] = r.b2 * s[i] + (1 - r.b2) * gi * gi;
                ww[i] = w[i] * keep - lr * (wm[i] * c1) / (std::sqrt(ws[i] * c2) + r.eps);
              } else {
                ws[i] = r.b2 * s[i] + (1 - r.b2) * gi * gi;
                ww[i] = w[i] - lr * gi / (std::sqrt(ws[i]) + r.eps);
              }
            }
            check_close("w", tw, ww, tol);
            if (solver != Solver::kRmsprop) check_close("m", tm, wm, tol);
            if (solver != Solver::kSgdm) check_close("s", ts, ws, tol);
          }};
}

// Batch norm (training) + ReLU + max pooling without padding as one op, against the three
// reference ops in turn: the pooled output, the batch statistics and every gradient.
inline AgreementRow bn_relu_max_pool_row(std::string name, int64_t n, int64_t h, int64_t w, int64_t c, int64_t k,
                                         int64_t s) {
  return {"batch_norm_relu_max_pool " + name, {BnReluMaxPoolDesc::kOp}, [=](Backend& be, double tol) {
            BnReluMaxPoolDesc d;
            d.bn.n = n, d.bn.h = h, d.bn.w = w, d.bn.c = c, d.bn.epsilon = 1e-5f;
            d.kh = d.kw = k, d.stride_h = d.stride_w = s;
            PoolDesc pd;
            pd.n = n, pd.h = h, pd.w = w, pd.c = c, pd.kh = pd.kw = k, pd.stride_h = pd.stride_w = s;
            Rng rng(31);
            const Vec x = random_vec(n * h * w * c, rng, -2.0, 2.0), offset = random_vec(c, rng, -0.5, 0.5);
            Vec scale = random_vec(c, rng, 0.3, 1.5);
            for (size_t i = 0; i < scale.size(); i += 3) scale[i] = -scale[i];
            const int64_t ho = d.out_h(), wo = d.out_w();
            const Vec dpooled = random_vec(n * ho * wo * c, rng);
            // The reference: normalize, ReLU, pool; back through the pooling, the ReLU, the norm.
            Vec mean, var;
            const Vec y =
                ref::act_forward({0, ActKind::kRelu}, ref::bn_forward_training(d.bn, x, scale, offset, &mean, &var));
            const Vec pooled = ref::pool_forward(pd, y);
            const Vec dy = ref::pool_backward(pd, y, dpooled);
            Vec dx, dscale, doffset;
            ref::bn_backward(d.bn, x, relu_mask(dy, y), scale, mean, var, dx, dscale, doffset);

            auto op = be.make(d);
            const Shape xs{n, h, w, c}, ps{n, ho, wo, c}, cs{c};
            Tensor tx = to_tensor(x, xs, be.device()), tscale = to_tensor(scale, cs, be.device());
            Tensor tpooled(ps, be.device()), tmean(cs, be.device()), tvar(cs, be.device());
            op->forward_training(tx, tscale, to_tensor(offset, cs, be.device()), tpooled, tmean, tvar);
            check_close("pooled", tpooled, pooled, tol);
            check_close("mean", tmean, mean, tol);
            check_close("var", tvar, var, tol);
            Tensor tdx(xs, be.device()), tdscale(cs, be.device()), tdoffset(cs, be.device());
            op->backward(tx, tpooled, to_tensor(dpooled, ps, be.device()), tscale, tdx, tdscale, tdoffset);
            check_close("dx", tdx, dx, tol);
            check_close("dscale", tdscale, dscale, tol);
            check_close("doffset", tdoffset, doffset, tol);
          }};
}

// Depth to space, forward and backward: a permutation, so exact.
inline AgreementRow depth_to_space_row(std::string name, DepthToSpaceDesc d) {
  return {"depth_to_space " + name, {DepthToSpaceDesc::kOp}, [d](Backend& be, double) {
            Rng rng(37);
            const Vec x = random_vec(d.numel(), rng), dy = random_vec(d.numel(), rng);
            auto op = be.make(d);
            const Shape xs{d.n, d.h, d.w, d.c}, ys{d.n, d.h * d.bh, d.w * d.bw, d.out_c()};
            Tensor y(ys, be.device()), dx(xs, be.device());
            op->forward(to_tensor(x, xs, be.device()), y);
            check_exact("depth_to_space", y, ref::depth_to_space_forward(d, x));
            op->backward(to_tensor(dy, ys, be.device()), dx);
            check_exact("depth_to_space backward", dx, ref::depth_to_space_backward(d, dy));
          }};
}

// Adaptive average pooling, forward and backward, against the double reference.
inline AgreementRow adaptive_pool_row(std::string name, AdaptivePoolDesc d) {
  return {"adaptive_average_pool " + name, {AdaptivePoolDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(53);
            const Vec x = random_vec(d.in_numel(), rng), dy = random_vec(d.out_numel(), rng);
            auto op = be.make(d);
            const Shape xs{d.n, d.h, d.w, d.c}, ys{d.n, d.out_h, d.out_w, d.c};
            Tensor y(ys, be.device()), dx(xs, be.device());
            be.fill(y, 7.f);  // every value must be written
            be.fill(dx, 7.f);
            op->forward(on_device(x, xs, be), y);
            check_close("adaptive_average_pool", y, ref::adaptive_pool_forward(d, x), tol);
            op->backward(on_device(dy, ys, be), dx);
            check_close("adaptive_average_pool backward", dx, ref::adaptive_pool_backward(d, dy), tol);
          }};
}

// Resize, forward and backward, against the double reference (nearest forward: exact).
inline AgreementRow resize_row(std::string name, ResizeDesc d) {
  return {"resize " + name, {ResizeDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(47);
            const Vec x = random_vec(d.x_numel(), rng), dy = random_vec(d.y_numel(), rng);
            auto op = be.make(d);
            const Shape xs{d.n, d.h, d.w, d.c}, ys{d.n, d.oh, d.ow, d.c};
            Tensor y(ys, be.device()), dx(xs, be.device());
            op->forward(on_device(x, xs, be), y);
            if (d.bilinear || d.bicubic)
              check_close("resize", y, ref::resize_forward(d, x), tol);
            else
              check_exact("resize", y, ref::resize_forward(d, x));
            op->backward(on_device(dy, ys, be), dx);
            check_close("resize backward", dx, ref::resize_backward(d, dy), tol);
          }};
}

// Batch broadcast: add (with x, in place, and without x: then exact) and the sum over rows.
inline AgreementRow batch_broadcast_row(std::string name, BatchBroadcastDesc d) {
  return {"batch_broadcast " + name, {BatchBroadcastDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(41);
            const Vec x = random_vec(d.rows * d.length, rng), b = random_vec(d.length, rng);
            auto op = be.make(d);
            const Shape ys{d.rows, d.length}, bs{d.length};
            Tensor y(ys, be.device()), tx = on_device(x, ys, be), db(bs, be.device());
            op->add(tx, on_device(b, bs, be), y);
            check_close("add", y, ref::batch_broadcast_add(d, x, b), tol);
            op->add(tx, on_device(b, bs, be), tx);
            check_close("add in place", tx, ref::batch_broadcast_add(d, x, b), tol);
            op->add(Tensor(), on_device(b, bs, be), y);
            check_exact("broadcast", y, ref::batch_broadcast_add(d, {}, b));
            op->sum(on_device(x, ys, be), db);
            check_close("sum", db, ref::batch_sum(d, x), tol);
          }};
}

// Spatial transpose, forward and backward: a permutation, so exact.
inline AgreementRow spatial_transpose_row(std::string name, SpatialTransposeDesc d) {
  return {"spatial_transpose " + name, {SpatialTransposeDesc::kOp}, [d](Backend& be, double) {
            Rng rng(43);
            const Vec x = random_vec(d.numel(), rng), dy = random_vec(d.numel(), rng);
            auto op = be.make(d);
            const Shape xs{d.n, d.h, d.w, d.c}, ys{d.n, d.w, d.h, d.c};
            Tensor y(ys, be.device()), dx(xs, be.device());
            op->forward(on_device(x, xs, be), y);
            check_exact("forward", y, ref::spatial_transpose_forward(d, x));
            op->backward(on_device(dy, ys, be), dx);
            check_exact("backward", dx, ref::spatial_transpose_backward(d, dy));
          }};
}

// Row gather, forward and backward; the backward's sums run in the same order everywhere.
inline AgreementRow row_gather_row(std::string name, RowGatherDesc d) {
  return {"row_gather " + name, {RowGatherDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(47);
            const Vec x = random_vec(d.n * d.rows_in * d.cols, rng), dy = random_vec(d.n * d.rows_out * d.cols, rng);
            auto op = be.make(d);
            const Shape xs{d.n, d.rows_in, d.cols}, ys{d.n, d.rows_out, d.cols};
            Tensor y(ys, be.device()), dx(xs, be.device());
            be.fill(y, 123.f);  // every value written, the zero rows too
            be.fill(dx, 123.f);
            op->forward(on_device(x, xs, be), y);
            check_exact("forward", y, ref::row_gather_forward(d, x));
            op->backward(on_device(dy, ys, be), dx);
            check_close("backward", dx, ref::row_gather_backward(d, dy), tol);
          }};
}

// Head normalize (Swin V2's cosine attention; linear: XCiT's temperature), forward and backward
// with the head factor (one logit scale past the clamp) and without; dx written over dy as the
// attention core does.
inline AgreementRow head_normalize_row(std::string name, HeadNormalizeDesc d) {
  return {"head_normalize " + name, {HeadNormalizeDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(53);
            const Vec x = random_vec(d.numel(), rng, -2.0, 2.0), dy = random_vec(d.numel(), rng);
            Vec t = random_vec(d.heads, rng, 1.0, 4.0);
            t.back() = 5.0;  // past log(100): s = 100, no gradient
            auto op = be.make(d);
            const Shape xs{d.rows, d.heads * d.per_head * d.dim}, ts{d.heads};
            for (const bool scaled : {true, false}) {
              INFO((scaled ? "with" : "without") << " the logit scale");
              const Vec tv = scaled ? t : Vec{};
              Tensor y(xs, be.device()), dx = on_device(dy, xs, be), dt(ts, be.device());
              const Tensor tt = scaled ? on_device(t, ts, be) : Tensor();
              op->forward(on_device(x, xs, be), tt, y);
              check_close("forward", y, ref::head_normalize_forward(d, x, tv), tol);
              Vec want_dx, want_dt;
              ref::head_normalize_backward(d, x, tv, dy, want_dx, want_dt);
              op->backward(on_device(x, xs, be), tt, dx, dx, scaled ? &dt : nullptr);
              check_close("backward dx", dx, want_dx, tol);
              if (scaled) check_close("backward dt", dt, want_dt, tol);
            }
          }};
}

// Rotary embedding with a rotation's tables: forward into another tensor and in place, the
// backward in place (as the attention core runs it).
inline AgreementRow rotary_row(std::string name, RotaryDesc d) {
  return {"rotary " + name, {RotaryDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(59);
            const Vec x = random_vec(d.numel(), rng, -2.0, 2.0), dy = random_vec(d.numel(), rng),
                      angle = random_vec(d.table_numel(), rng, -3.2, 3.2);
            Vec c(angle.size()), s(angle.size());
            for (size_t i = 0; i < angle.size(); ++i) {
              c[i] = std::cos(angle[i]);
              s[i] = std::sin(angle[i]);
            }
            auto op = be.make(d);
            const Shape xs{d.n * d.seq, d.heads * d.dim}, ts{d.table_numel()};
            const Tensor ct = on_device(c, ts, be), st = on_device(s, ts, be);
            Tensor y(xs, be.device()), inplace = on_device(x, xs, be), g = on_device(dy, xs, be);
            const Vec want = ref::rotary(d, x, c, s);
            op->forward(on_device(x, xs, be), ct, st, y);
            check_close("forward", y, want, tol);
            op->forward(inplace, ct, st, inplace);
            check_close("forward in place", inplace, want, tol);
            op->backward(g, ct, st, g);
            check_close("backward in place", g, ref::rotary(d, dy, c, s, true), tol);
          }};
}

// Separable self-attention, forward (its output, scores and context) and backward, against the
// double reference (the scores and context as the reference's unfold defines them).
inline AgreementRow separable_attention_row(std::string name, SeparableAttentionDesc d) {
  return {"separable_attention " + name, {SeparableAttentionDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(61);
            const Vec x = random_vec(d.x_numel(), rng, -3.0, 3.0), dy = random_vec(d.y_numel(), rng);
            auto op = be.make(d);
            const Shape xs{d.n, d.h, d.w, 1 + 2 * d.c}, ys{d.n, d.h, d.w, d.c};
            Tensor y(ys, be.device()), s(Shape{d.n, d.h, d.w}, be.device()),
                ctx(Shape{d.n, d.ph * d.pw, d.c}, be.device()), dx(xs, be.device());
            const Tensor tx = on_device(x, xs, be);
            op->forward(tx, y, s, ctx);
            check_close("forward", y, ref::separable_attention_forward(d, x), tol);
            // The scores sum to 1 over each group: one value per pixel, so their total is n ph pw.
            double total = 0;
            for (double v : to_vec(s)) total += v;
            const double groups = static_cast<double>(d.n * d.ph * d.pw);
            CHECK(std::abs(total - groups) < 1e-4 * groups);
            op->backward(tx, on_device(dy, ys, be), s, ctx, dx);
            check_close("backward", dx, ref::separable_attention_backward(d, x, dy), tol);
          }};
}

// ReLU linear attention, forward (its output and denominators) and backward, against the double
// reference.
inline AgreementRow linear_attention_row(std::string name, LinearAttentionDesc d) {
  return {"linear_attention " + name, {LinearAttentionDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(67);
            const Vec x = random_vec(d.x_numel(), rng, -3.0, 3.0), dy = random_vec(d.y_numel(), rng);
            auto op = be.make(d);
            const Shape xs{d.n, d.s, 1, d.heads * 3 * d.d}, ys{d.n, d.s, 1, d.heads * d.d};
            Tensor y(ys, be.device()), kv(Shape{d.n, d.heads, d.d, d.d + 1}, be.device()),
                den(Shape{d.n, d.heads, d.s}, be.device()), dx(xs, be.device());
            const Tensor tx = on_device(x, xs, be);
            op->forward(tx, y, kv, den);
            const Vec want = ref::linear_attention_forward(d, x);
            check_close("forward", y, want, tol);
            // Each denominator is eps plus a sum of products of ReLU outputs: at least eps.
            for (double v : to_vec(den)) CHECK(v >= d.eps * (1 - 1e-6));
            op->backward(tx, y, on_device(dy, ys, be), kv, den, dx);
            check_close("backward", dx, ref::linear_attention_backward(d, x, dy), tol);
          }};
}

// A Swin window partition's index: (h, w) pixels padded to whole windows of ws x ws, rolled
// by -shift, read window by window (-1: a padded pixel).
inline std::vector<int64_t> window_index(int64_t h, int64_t w, int64_t ws, int64_t shift) {
  const int64_t ph = (h + ws - 1) / ws * ws, pw = (w + ws - 1) / ws * ws;
  std::vector<int64_t> index;
  for (int64_t wy = 0; wy < ph / ws; ++wy)
    for (int64_t wx = 0; wx < pw / ws; ++wx)
      for (int64_t y = 0; y < ws; ++y)
        for (int64_t x = 0; x < ws; ++x) {
          const int64_t sy = (wy * ws + y + shift) % ph, sx = (wx * ws + x + shift) % pw;
          index.push_back(sy < h && sx < w ? sy * w + sx : -1);
        }
  return index;
}

// The relative position table's index of a ws x ws window: entry (h, i, j) of the dense bias
// (heads, S, S) reads row rel(i, j) * heads + h of the (table rows * heads, 1) table.
inline std::vector<int64_t> relative_index(int64_t ws, int64_t heads) {
  const int64_t s = ws * ws, span = 2 * ws - 1;
  std::vector<int64_t> index;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = 0; j < s; ++j)
        index.push_back(((i / ws - j / ws + ws - 1) * span + (i % ws - j % ws + ws - 1)) * heads + h);
  return index;
}

inline std::vector<AgreementRow> kernel_rows() {
  std::vector<AgreementRow> rows = elementwise_rows(1001);
  for (AgreementRow& r : elementwise_rows(70000)) rows.push_back(std::move(r));  // past the parallel threshold
  rows.push_back(norm_row(1000, 37));
  rows.push_back(norm_row(100000, 3));
  rows.push_back(shift_scale_row(2 * 5 * 4 * 3, 5 * 4 * 3, 0));  // a mean image
  rows.push_back(shift_scale_row(2 * 5 * 4 * 3, 3, 3));          // per-channel mean and scale
  rows.push_back(shift_scale_row(63000, 7, 7));
  rows.push_back(dropout_row(10000, 0.5f));
  rows.push_back(dropout_row(20000, 0.1f));
  rows.push_back(channel_moments_row(150, 7));
  rows.push_back(channel_moments_row(4096, 32));
  rows.push_back(optimizer_row(Solver::kSgdm, 1000));
  rows.push_back(optimizer_row(Solver::kAdam, 1000));
  rows.push_back(optimizer_row(Solver::kRmsprop, 70000));
  rows.push_back(optimizer_row(Solver::kAdamW, 70000));
  rows.push_back(bn_relu_max_pool_row("3x3 stride 2 odd sizes", 2, 9, 7, 5, 3, 2));
  rows.push_back(bn_relu_max_pool_row("2x2 stride 2 16 channels", 3, 8, 8, 16, 2, 2));
  rows.push_back(depth_to_space_row("DCR block 2, 2x3x5x12", {2, 3, 5, 12, 2, 2, false}));
  rows.push_back(depth_to_space_row("CRD block 3, 1x4x2x18 (pixel_shuffle)", {1, 4, 2, 18, 3, 3, true}));
  rows.push_back(depth_to_space_row("DCR block 2x3, 2x3x4x12", {2, 3, 4, 12, 2, 3, false}));
  rows.push_back(depth_to_space_row("CRD block 3x2, 2x2x3x30", {2, 2, 3, 30, 3, 2, true}));
  rows.push_back(depth_to_space_row("DCR block 2, 2x40x40x64 (over 200k values)", {2, 40, 40, 64, 2, 2, false}));
  rows.push_back(adaptive_pool_row("5x7 -> 3x4 (overlapping regions)", {2, 5, 7, 3, 3, 4}));
  rows.push_back(adaptive_pool_row("8x6 -> 4x3 (regions of 2x2)", {2, 8, 6, 5, 4, 3}));
  rows.push_back(adaptive_pool_row("3x2 -> 5x4 (larger than the input)", {1, 3, 2, 4, 5, 4}));
  rows.push_back(adaptive_pool_row("2x13x11x64 -> 7x7 (over 18k values)", {2, 13, 11, 64, 7, 7}));
  rows.push_back(resize_row("nearest x2, asymmetric floor (PyTorch's nearest)",
                            ref::resize_desc(2, 3, 5, 4, 6, 10, false, false, true)));
  rows.push_back(
      resize_row("nearest 7x5 -> 4x9, half-pixel round", ref::resize_desc(2, 7, 5, 3, 4, 9, false, true, false)));
  rows.push_back(resize_row("bilinear x2, half-pixel (PyTorch's bilinear)",
                            ref::resize_desc(2, 4, 3, 5, 8, 6, true, true, false)));
  rows.push_back(resize_row("bilinear scale [1.5, 0.5], asymmetric",
                            ref::resize_desc(1, 5, 8, 3, 7, 4, true, false, false, 1.5, 0.5)));
  rows.push_back(resize_row("bilinear 2x24x24x64 -> 52x37 (over 200k values)",
                            ref::resize_desc(2, 24, 24, 64, 52, 37, true, true, false)));
  rows.push_back(resize_row("bicubic 15x15 -> 14x14, half-pixel (CrossViT's 240 -> 224)",
                            ref::cubic_resize(ref::resize_desc(2, 15, 15, 3, 14, 14, false, true, false))));
  rows.push_back(resize_row("bicubic x2 of 3x4, asymmetric (taps past both edges)",
                            ref::cubic_resize(ref::resize_desc(1, 3, 4, 5, 6, 8, false, false, false))));
  rows.push_back(resize_row("bilinear 4x7 -> 8x8, align corners (MobileViT v2's at 224)",
                            ref::aligned_resize(ref::resize_desc(2, 7, 7, 6, 8, 8, true, true, false))));
  rows.push_back(resize_row("nearest 5x3 -> 2x7, align corners",
                            ref::aligned_resize(ref::resize_desc(1, 5, 3, 4, 2, 7, false, true, false))));
  rows.push_back(
      resize_row("bicubic 3x4 -> 1x6, align corners (one output row)",
                 ref::aligned_resize(ref::cubic_resize(ref::resize_desc(2, 3, 4, 3, 1, 6, false, true, false)))));
  rows.push_back(resize_row("bicubic 2x24x24x64 -> 52x37 (over 200k values)",
                            ref::cubic_resize(ref::resize_desc(2, 24, 24, 64, 52, 37, false, true, false))));
  rows.push_back(batch_broadcast_row("3 rows of 5", {3, 5}));
  rows.push_back(batch_broadcast_row("32 rows of 65x192 (a ViT's position table)", {32, 65 * 192}));
  rows.push_back(spatial_transpose_row("2x3x4x5", {2, 3, 4, 5}));
  rows.push_back(spatial_transpose_row("4x8x8x192 (a patch grid)", {4, 8, 8, 192}));
  rows.push_back(spatial_transpose_row("3x7x5x1 (one value per pixel)", {3, 7, 5, 1}));
  rows.push_back(spatial_transpose_row("32x196x128x1 (xcit_nano's (S, C) planes)", {32, 196, 128, 1}));
  rows.push_back(row_gather_row("4 blocks of 5 rows to 7", {4, 5, 7, 3, {4, 0, -1, 2, 2, 1, 4}}));
  rows.push_back(row_gather_row("window partition of 2 images of 9x10x96, 7x7 windows shifted 3",
                                {2, 90, 4 * 49, 96, window_index(9, 10, 7, 3)}));
  rows.push_back(row_gather_row("relative position table of 7x7 windows, 3 heads (2401 reads of 169 rows)",
                                {1, 13 * 13 * 3, 3 * 49 * 49, 1, relative_index(7, 3)}));
  rows.push_back(head_normalize_row("5 rows of 3 heads of 4", {5, 3, 4}));
  rows.push_back(head_normalize_row("2 images of 64 windows of 49 tokens, 4 heads of 32 (swin_v2_t's first stage)",
                                    {2 * 64 * 49, 4, 32}));
  rows.push_back(head_normalize_row("linear, 2 rows of 2 heads of 3 groups of 7", {2, 2, 7, 4.6, 3, true}));
  rows.push_back(head_normalize_row("linear, 4 images of 4 heads of 32 channels of 196 tokens (xcit_nano's XCA)",
                                    {4, 4, 196, 4.6, 32, true}));
  rows.push_back(rotary_row("interleaved, 3 sequences of 5 tokens (2 prefix), 2 heads of 8", {3, 5, 2, 8, 2, false}));
  rows.push_back(rotary_row("half, 2 sequences of 7 tokens, 1 head of 2", {2, 7, 1, 2, 0, true}));
  rows.push_back(
      rotary_row("half, a table per head, 3 sequences of 6 tokens (1 prefix), 3 heads of 4", {3, 6, 3, 4, 1, true, 3}));
  rows.push_back(rotary_row("interleaved, 4 images of 257 tokens (1 prefix), 3 heads of 64 (eva02_tiny's)",
                            {4, 257, 3, 64, 1, false}));
  rows.push_back(separable_attention_row("2 images of 6x8, 2x2 patches, 5 channels", {2, 6, 8, 5, 2, 2}));
  rows.push_back(separable_attention_row("1 image of 5x3, 1x3 patches (3 groups of 5), 1 channel", {1, 5, 3, 1, 1, 3}));
  rows.push_back(separable_attention_row("4 images of 28x28, 2x2 patches, 64 channels (mobilevitv2_050's first block)",
                                         {4, 28, 28, 64, 2, 2}));
  rows.push_back(linear_attention_row("2 images of 6 tokens, 3 heads of 4", {2, 6, 3, 4, 1e-5f}));
  rows.push_back(linear_attention_row("1 image of 1 token, 1 head of 1, eps 0.5", {1, 1, 1, 1, 0.5f}));
  rows.push_back(linear_attention_row(
      "4 images of 196 tokens, 8 heads of 16 (efficientvit_b0's third stage; the CPU's passes of 1 image)",
      {4, 196, 8, 16, 1e-5f}));
  rows.push_back(linear_attention_row(
      "6 images of 49 tokens, 16 heads of 16 (efficientvit_b0's fourth stage; the CPU's passes of 2 images)",
      {6, 49, 16, 16, 1e-5f}));
  for (AgreementRow& r : loss_rows()) rows.push_back(std::move(r));
  return rows;
}

}  // namespace agreement
}  // namespace dlt::test
