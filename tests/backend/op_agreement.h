// The backend agreement table: every heavy op and the loss, forward and backward, on random
// inputs against the double-precision reference (support/reference_ops.h). Header-only so
// that any backend's test binary (CPU here, a future CUDA binary) runs the same rows:
//   for (auto& row : agreement_rows()) { INFO(row.name); row.run(backend, tol); }
// A new op or shape is one more row. Inputs are made on the host and moved to be.device().
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/kernel_kinds.h"
#include "backend/op_registry.h"
#include "support/reference_ops.h"
#include "support/tensor_utils.h"

namespace dlt::test {

// A row runs one op or kernel (or a forward/backward pair) on random inputs and checks it
// against the double reference. ops: the registry names it covers (op_registry.h): every
// registered kernel must be covered by a row (test_op_agreement.cpp), and a row runs on a
// backend only where all its ops are registered for that backend's device.
struct AgreementRow {
  std::string name;
  std::vector<std::string> ops;
  std::function<void(Backend& be, double tol)> run;
};

// Whether every op of row has a kernel on be's device.
inline bool runs_on(const AgreementRow& row, const Backend& be) {
  for (const std::string& op : row.ops)
    if (op_registry::find(op, be.device().type).empty()) return false;
  return true;
}

namespace agreement {

// The element-wise check's floor: 1% of the tensor's largest magnitude. Entries below it are
// held to tol x 1% of that magnitude absolutely (100 times tighter than the comparison with the
// largest value alone); entries above it to tol of their own value. Not a fixed absolute floor:
// these rows' values span 1e-3 to 40, and a float32 sum that cancels to near zero keeps the
// rounding of its terms (about 1e-5 here, measured), which scale with the tensor, not with
// the entry.
constexpr double kFloorFraction = 1e-2;
// Convolutions a backend may run as Winograd F(4x4, 3x3) (3x3, stride 1, dilation 1, one
// group: dltrain's AVX2 kernel, oneDNN's, cuDNN's): the transforms round every output of a
// tile alike, about 5e-6 of the tensor's largest value (measured: 1.6e-4 on values up to 31,
// also on outputs of 0.5), ten times direct convolution's. Their floor is 25%.
constexpr double kWinogradFloorFraction = 0.25;

// Weight and bias gradients summed over many positions (4096 or more per entry): a float32 sum's
// rounding follows the size of its partial sums, which is the tensor's, not the entry's
// (measured: 2.7e-4 at an entry of 2.05 in a transposed convolution's dw over 16384 positions
// whose largest value is 155). Their floor is 5%.
constexpr double kLongSumFloorFraction = 0.05;
inline double sum_floor(int64_t terms, double floor_fraction) {
  return terms >= 4096 ? std::max(floor_fraction, kLongSumFloorFraction) : floor_fraction;
}

// Both: the largest error against the tensor's largest value, and every element against its
// own value (above the floor, floor_fraction x the largest value).
inline void check_close(const char* what, const Tensor& got, const Vec& want, double tol,
                        double floor_fraction = kFloorFraction) {
  const Vec g = to_vec(got);
  Comparison c = compare(g, want);
  ElementwiseError e = elementwise_error(g, want, std::max(floor_fraction * c.scale, 1e-30));
  INFO(what << ": " << c.str() << "; " << e.str());
  CHECK(c.rel <= tol);
  CHECK(e.rel <= tol);
}

inline bool may_run_winograd(const ConvDesc& d) {
  return d.kh == 3 && d.kw == 3 && d.stride_h == 1 && d.stride_w == 1 && d.dilation_h == 1 && d.dilation_w == 1 &&
         d.groups == 1;
}

// Zeroes dy where y <= 0, or y >= ceiling when finite (the relu or clipped relu backward a layer
// applies before calling a fused op).
inline Vec relu_mask(const Vec& dy, const Vec& y, double ceiling = std::numeric_limits<double>::infinity()) {
  Vec out(dy);
  for (size_t i = 0; i < out.size(); ++i)
    if (!(y[i] > 0 && y[i] < ceiling)) out[i] = 0;
  return out;
}

inline AgreementRow conv_row(std::string name, ConvDesc d) {
  return {"conv " + name, {ConvDesc::kOp}, [d](Backend& be, double tol) {
            const double floor = may_run_winograd(d) ? kWinogradFloorFraction : kFloorFraction;
            Rng rng(17);
            const Device dev = be.device();
            const int64_t oh = d.out_h(), ow = d.out_w();
            Vec x = random_vec(d.n * d.h * d.w * d.c, rng), w = random_vec(d.weight_numel(), rng);
            Vec b = random_vec(d.k, rng), dy = random_vec(d.n * oh * ow * d.k, rng);
            Tensor tx = to_tensor(x, {d.n, d.h, d.w, d.c}, dev);
            Tensor tw = to_tensor(w, {d.k, d.kh, d.kw, d.group_c()}, dev);
            Tensor tb = to_tensor(b, {d.k}, dev);
            Tensor ty(Shape{d.n, oh, ow, d.k}, dev), tdx(tx.shape(), dev);
            Tensor tdw(tw.shape(), dev), tdb(tb.shape(), dev);
            auto op = be.make(d);
            op->forward(tx, tw, tb, ty);
            check_close("forward", ty, ref::conv_forward(d, x, w, b), tol, floor);
            if (d.fuse_relu) dy = relu_mask(dy, to_vec(ty), d.relu_ceiling);
            Tensor tdy = to_tensor(dy, ty.shape(), dev);
            op->backward_data(tdy, tw, tdx);
            check_close("backward_data", tdx, ref::conv_backward_data(d, dy, w), tol, floor);
            be.fill(tdw, 123.f);  // must be overwritten, not accumulated
            op->backward_weights(tx, tdy, tdw, tdb);
            Vec dw, db;
            ref::conv_backward_weights(d, x, dy, dw, db);
            check_close("backward_weights dw", tdw, dw, tol, sum_floor(d.n * oh * ow, floor));
            check_close("backward_weights db", tdb, db, tol, sum_floor(d.n * oh * ow, floor));
          }};
}

inline AgreementRow deconv_row(std::string name, DeconvDesc d) {
  return {"transposed conv " + name, {DeconvDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(19);
            const Device dev = be.device();
            const int64_t oh = d.out_h(), ow = d.out_w();
            Vec x = random_vec(d.n * d.h * d.w * d.c, rng), w = random_vec(d.c * d.kh * d.kw * d.k, rng);
            Vec b = random_vec(d.k, rng), dy = random_vec(d.n * oh * ow * d.k, rng);
            Tensor tx = to_tensor(x, {d.n, d.h, d.w, d.c}, dev);
            Tensor tw = to_tensor(w, {d.c, d.kh, d.kw, d.k}, dev);
            Tensor tb = to_tensor(b, {d.k}, dev);
            Tensor ty(Shape{d.n, oh, ow, d.k}, dev), tdx(tx.shape(), dev);
            Tensor tdw(tw.shape(), dev), tdb(tb.shape(), dev);
            Tensor tdy = to_tensor(dy, ty.shape(), dev);
            auto op = be.make(d);
            be.fill(ty, 77.f);  // must be overwritten
            op->forward(tx, tw, tb, ty);
            check_close("forward", ty, ref::deconv_forward(d, x, w, b), tol);
            op->backward_data(tdy, tw, tdx);
            check_close("backward_data", tdx, ref::deconv_backward_data(d, dy, w), tol);
            be.fill(tdw, 123.f);  // must be overwritten, not accumulated
            be.fill(tdb, 123.f);
            op->backward_weights(tx, tdy, tdw, tdb);
            Vec dw, db;
            ref::deconv_backward_weights(d, x, dy, dw, db);
            check_close("backward_weights dw", tdw, dw, tol, sum_floor(d.n * d.h * d.w, kFloorFraction));
            check_close("backward_weights db", tdb, db, tol, sum_floor(d.n * d.h * d.w, kFloorFraction));
          }};
}

inline AgreementRow fc_row(std::string name, FcDesc d) {
  return {"fc " + name, {FcDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(23);
            const Device dev = be.device();
            Vec x = random_vec(d.n * d.in, rng), w = random_vec(d.out * d.in, rng);
            Vec b = random_vec(d.out, rng), dy = random_vec(d.n * d.out, rng);
            Tensor tx = to_tensor(x, {d.n, d.in}, dev), tw = to_tensor(w, {d.out, d.in}, dev);
            Tensor tb = to_tensor(b, {d.out}, dev);
            Tensor ty(Shape{d.n, d.out}, dev), tdx(tx.shape(), dev);
            Tensor tdw(tw.shape(), dev), tdb(tb.shape(), dev);
            auto op = be.make(d);
            op->forward(tx, tw, tb, ty);
            check_close("forward", ty, ref::fc_forward(d, x, w, b), tol);
            if (d.fuse_relu) dy = relu_mask(dy, to_vec(ty));
            Tensor tdy = to_tensor(dy, ty.shape(), dev);
            op->backward_data(tdy, tw, tdx);
            check_close("backward_data", tdx, ref::fc_backward_data(d, dy, w), tol);
            op->backward_weights(tx, tdy, tdw, tdb);
            Vec dw, db;
            ref::fc_backward_weights(d, x, dy, dw, db);
            check_close("backward_weights dw", tdw, dw, tol);
            check_close("backward_weights db", tdb, db, tol);
          }};
}

inline AgreementRow pool_row(std::string name, PoolDesc d) {
  return {"pool " + name, {PoolDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(29);
            const Device dev = be.device();
            const Shape ys{d.n, d.out_h(), d.out_w(), d.c};
            Vec x = random_vec(d.n * d.h * d.w * d.c, rng), dy = random_vec(ys.numel(), rng);
            Tensor tx = to_tensor(x, {d.n, d.h, d.w, d.c}, dev), tdy = to_tensor(dy, ys, dev);
            Tensor ty(ys, dev), tdx(tx.shape(), dev);
            auto op = be.make(d);
            Vec want = ref::pool_forward(d, x);
            op->forward(tx, ty, false);
            check_close("forward inference", ty, want, tol);
            be.fill(ty, 0.f);
            op->forward(tx, ty, true);
            check_close("forward training", ty, want, tol);
            op->backward(tdy, tdx);
            check_close("backward", tdx, ref::pool_backward(d, x, dy), tol);
          }};
}

inline AgreementRow batch_norm_row(std::string name, BatchNormDesc d) {
  return {"batch_norm " + name, {BatchNormDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(31);
            const Device dev = be.device();
            const Shape xs{d.n, d.h, d.w, d.c}, cs{d.c};
            Vec x = random_vec(xs.numel(), rng, -2.0, 3.0), dy = random_vec(xs.numel(), rng);
            Vec scale = random_vec(d.c, rng, 0.5, 1.5), offset = random_vec(d.c, rng);
            Tensor tx = to_tensor(x, xs, dev), tdy = to_tensor(dy, xs, dev);
            Tensor tscale = to_tensor(scale, cs, dev), toffset = to_tensor(offset, cs, dev);
            Tensor ty(xs, dev), tdx(xs, dev), tmean(cs, dev), tvar(cs, dev);
            Tensor tdscale(cs, dev), tdoffset(cs, dev);
            auto op = be.make(d);
            Vec mean, var;
            Vec want = ref::bn_forward_training(d, x, scale, offset, &mean, &var);
            op->forward_training(tx, tscale, toffset, ty, tmean, tvar);
            check_close("forward_training y", ty, want, tol);
            check_close("forward_training mean", tmean, mean, tol);
            check_close("forward_training var", tvar, var, tol);
            // backward: the fused op applies the relu mask itself; the reference does not
            Vec dy_pre = d.fuse_relu ? relu_mask(dy, want) : dy;
            op->backward(tx, tdy, tscale, tmean, tvar, tdx, tdscale, tdoffset);
            Vec dx, dscale, doffset;
            ref::bn_backward(d, x, dy_pre, scale, mean, var, dx, dscale, doffset);
            check_close("backward dx", tdx, dx, tol);
            check_close("backward dscale", tdscale, dscale, tol);
            check_close("backward doffset", tdoffset, doffset, tol);
            // inference with other statistics than the batch's
            Vec rmean = random_vec(d.c, rng), rvar = random_vec(d.c, rng, 0.5, 2.0);
            op->forward_inference(tx, tscale, toffset, to_tensor(rmean, cs, dev), to_tensor(rvar, cs, dev), ty);
            check_close("forward_inference", ty, ref::bn_forward_inference(d, x, scale, offset, rmean, rvar), tol);
          }};
}

inline AgreementRow lrn_row(std::string name, LrnDesc d) {
  return {"lrn " + name, {LrnDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(37);
            const Device dev = be.device();
            const Shape xs{d.n, d.h, d.w, d.c};
            Vec x = random_vec(xs.numel(), rng, -3.0, 3.0), dy = random_vec(xs.numel(), rng);
            Tensor tx = to_tensor(x, xs, dev), tdy = to_tensor(dy, xs, dev);
            Tensor ty(xs, dev), tdx(xs, dev);
            auto op = be.make(d);
            Vec want = ref::lrn_forward(d, x);
            op->forward(tx, ty, false);
            check_close("forward inference", ty, want, tol);
            op->forward(tx, ty, true);
            check_close("forward training", ty, want, tol);
            op->backward(tx, tdy, tdx);
            check_close("backward", tdx, ref::lrn_backward(d, x, dy), tol);
          }};
}

// x ~ U(-range, range): hard sigmoid and hard swish saturate beyond 3.
inline AgreementRow act_row(std::string name, ActDesc d, double range = 3.0) {
  return {"activation " + name, {ActDesc::kOp}, [d, range](Backend& be, double tol) {
            Rng rng(41);
            const Device dev = be.device();
            const Shape s{d.numel};
            Vec x = random_vec(d.numel, rng, -range, range), dy = random_vec(d.numel, rng);
            Tensor tx = to_tensor(x, s, dev), ty(s, dev), tdx(s, dev);
            auto op = be.make(d);
            op->forward(tx, ty);
            check_close("forward", ty, ref::act_forward(d, x), tol);
            Tensor tdy = to_tensor(dy, s, dev);
            op->backward(tx, ty, tdy, tdx);
            Vec want = ref::act_backward(d, x, dy);
            check_close("backward", tdx, want, tol);
            op->backward(tx, ty, tdy, tdy);  // dx may alias dy
            check_close("backward in place", tdy, want, tol);
          }};
}

inline AgreementRow softmax_row(std::string name, int64_t rows, int64_t c) {
  return {"softmax " + name, {SoftmaxDesc::kOp}, [rows, c](Backend& be, double tol) {
            Rng rng(43);
            const Device dev = be.device();
            const Shape s{rows, 1, 1, c};
            Vec x = random_vec(rows * c, rng, -5.0, 5.0), dy = random_vec(rows * c, rng);
            Tensor tx = to_tensor(x, s, dev), ty(s, dev), tdx(s, dev);
            auto op = be.make(SoftmaxDesc{rows, c});
            op->forward(tx, ty);
            Vec y = ref::softmax_forward(rows, c, x);
            check_close("forward", ty, y, tol);
            op->backward(ty, to_tensor(dy, s, dev), tdx);
            check_close("backward", tdx, ref::softmax_backward(rows, c, to_vec(ty), dy), tol);
          }};
}

inline AgreementRow concat_row(std::string name, int64_t n, int64_t h, int64_t w, std::vector<int64_t> channels) {
  return {"concat " + name, {ConcatDesc::kOp}, [=](Backend& be, double tol) {
            Rng rng(47);
            const Device dev = be.device();
            const int64_t pixels = n * h * w;
            int64_t total = 0;
            std::vector<Vec> xs;
            std::vector<Tensor> txs, tdxs;
            std::vector<const Tensor*> in;
            std::vector<Tensor*> out;
            for (int64_t c : channels) {
              total += c;
              xs.push_back(random_vec(pixels * c, rng));
              txs.push_back(to_tensor(xs.back(), {n, h, w, c}, dev));
              tdxs.emplace_back(Shape{n, h, w, c}, dev);
            }
            for (size_t i = 0; i < channels.size(); ++i) {
              in.push_back(&txs[i]);
              out.push_back(i == 1 ? nullptr : &tdxs[i]);  // input 1 needs no gradient
            }
            Tensor ty(Shape{n, h, w, total}, dev);
            auto op = be.make(ConcatDesc{n, h, w, channels});
            op->forward(in, ty);
            check_close("forward", ty, ref::concat_forward(pixels, channels, xs), tol);
            Vec dy = random_vec(pixels * total, rng);
            op->backward(to_tensor(dy, ty.shape(), dev), out);
            auto want = ref::concat_backward(pixels, channels, dy);
            for (size_t i = 0; i < channels.size(); ++i)
              if (out[i]) check_close("backward", tdxs[i], want[i], tol);
          }};
}

// Max pooling indices, unpooling and its backward (a gather) against the reference.
inline AgreementRow unpool_row(std::string name, PoolDesc d) {
  return {"max_unpool " + name,
          {MaxPoolIndicesKernel::kOp, MaxUnpoolKernel::kOp, MaxUnpoolBackwardKernel::kOp},
          [d](Backend& be, double tol) {
            Rng rng(71);
            const Device dev = be.device();
            const int64_t big = d.n * d.h * d.w * d.c, small = d.n * d.out_h() * d.out_w() * d.c;
            Vec x = random_vec(big, rng), pooled = random_vec(small, rng);
            Tensor idx(Shape{small}, dev, DType::kI32);
            be.max_pool_indices(to_tensor(x, {d.n, d.h, d.w, d.c}, dev), idx, d);
            const std::vector<int32_t> want = ref::max_pool_indices(d, x);
            Tensor host = idx.to(Device::cpu());
            CHECK(std::vector<int32_t>(host.data_i32(), host.data_i32() + small) == want);
            Tensor y(Shape{d.n, d.h, d.w, d.c}, dev);
            be.max_unpool(to_tensor(pooled, {small}, dev), idx, y, d);
            check_close("unpool", y, ref::max_unpool(d, pooled, want), tol);
            Tensor dx(Shape{small}, dev);
            be.max_unpool_backward(to_tensor(x, {big}, dev), idx, dx, d);
            Vec gathered(small);
            for (int64_t k = 0; k < small; ++k) {
              const int64_t n = k / (d.out_h() * d.out_w() * d.c), c = k % d.c;
              gathered[k] = x[(n * d.h * d.w + want[k]) * d.c + c];
            }
            check_close("unpool backward", dx, gathered, tol);
          }};
}

// Cropping and its gradient (a scatter into zeros) against the reference.
inline AgreementRow crop_row(std::string name, CropDesc d) {
  return {"crop2d " + name, {Crop2dKernel::kOp, Crop2dBackwardKernel::kOp}, [d](Backend& be, double tol) {
            Rng rng(73);
            const Device dev = be.device();
            const Shape big{d.n, d.h, d.w, d.c}, small{d.n, d.out_h, d.out_w, d.c};
            Vec x = random_vec(big.numel(), rng), dy = random_vec(small.numel(), rng);
            Tensor y(small, dev), dx(big, dev);
            be.fill(dx, 5.f);  // must be overwritten everywhere, zeros outside the window
            be.crop2d(to_tensor(x, big, dev), y, d);
            check_close("crop2d", y, ref::crop2d_forward(d, x), tol);
            be.crop2d_backward(to_tensor(dy, small, dev), dx, d);
            check_close("crop2d backward", dx, ref::crop2d_backward(d, dy), tol);
          }};
}

// The broadcasting product (Backend::multiply): each input of its extent (d.extents: full, (n, c)
// repeated over the pixels, (n, pixels) repeated over the channels); every input's gradient, with
// y and dx prefilled so that they must be overwritten.
inline AgreementRow multiply_row(std::string name, ProductDesc d) {
  return {"multiply " + name, {MultiplyKernel::kOp, MultiplyBackwardKernel::kOp}, [d](Backend& be, double tol) {
            Rng rng(79);
            const Device dev = be.device();
            const Shape full{d.n, d.pixels, 1, d.c};
            std::vector<Vec> xs;
            std::vector<Tensor> txs;
            std::vector<const Tensor*> in;
            for (ProductDesc::Extent e : d.extents) {
              const Shape s = e == ProductDesc::kChannels ? Shape{d.n, 1, 1, d.c}
                              : e == ProductDesc::kPixels ? Shape{d.n, d.pixels, 1, 1}
                                                          : full;
              xs.push_back(random_vec(s.numel(), rng, -2.0, 2.0));
              txs.push_back(to_tensor(xs.back(), s, dev));
            }
            for (const Tensor& t : txs) in.push_back(&t);
            Tensor y(full, dev);
            be.fill(y, 9.f);
            be.multiply(in, y, d);
            check_close("forward", y, ref::multiply_forward(d, xs), tol);
            const Vec dy = random_vec(full.numel(), rng);
            const Tensor tdy = to_tensor(dy, full, dev);
            for (size_t i = 0; i < xs.size(); ++i) {
              INFO("gradient of input " << i << " (extent " << int(d.extents[i]) << ")");
              Tensor dx(txs[i].shape(), dev);
              be.fill(dx, 123.f);
              be.multiply_backward(tdy, in, i, dx, d);
              check_close("backward", dx, ref::multiply_backward(d, xs, dy, i), tol);
            }
          }};
}

// Layer normalization: training forward (y and the row statistics), inference forward, backward
// with the parameter gradients and without them (frozen).
inline AgreementRow layer_norm_row(std::string name, LayerNormDesc d) {
  return {"layer_norm " + name, {LayerNormDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(83);
            const Device dev = be.device();
            const Shape xs{d.rows, d.length}, cs{d.c}, rs{d.rows};
            Vec x = random_vec(xs.numel(), rng, -2.0, 3.0), dy = random_vec(xs.numel(), rng);
            Vec scale = random_vec(d.c, rng, 0.5, 1.5), offset = random_vec(d.c, rng);
            Tensor tx = to_tensor(x, xs, dev), tdy = to_tensor(dy, xs, dev);
            Tensor tscale = to_tensor(scale, cs, dev), toffset = to_tensor(offset, cs, dev);
            Tensor ty(xs, dev), tdx(xs, dev), tmean(rs, dev), tvar(rs, dev), tdscale(cs, dev), tdoffset(cs, dev);
            auto op = be.make(d);
            Vec mean, var;
            const Vec want = ref::layer_norm_forward(d, x, scale, offset, &mean, &var);
            be.fill(ty, 7.f);
            op->forward_training(tx, tscale, toffset, ty, tmean, tvar);
            check_close("forward_training y", ty, want, tol);
            check_close("forward_training mean", tmean, mean, tol);
            check_close("forward_training var", tvar, var, tol);
            be.fill(ty, 7.f);
            op->forward_inference(tx, tscale, toffset, ty);
            check_close("forward_inference y", ty, want, tol);
            Vec dx, dscale, doffset;
            ref::layer_norm_backward(d, x, dy, scale, dx, dscale, doffset);
            be.fill(tdscale, 123.f);  // overwritten, not accumulated
            be.fill(tdoffset, 123.f);
            op->backward(tx, tdy, tscale, tmean, tvar, tdx, tdscale, tdoffset);
            check_close("backward dx", tdx, dx, tol);
            check_close("backward dscale", tdscale, dscale, tol);
            check_close("backward doffset", tdoffset, doffset, tol);
            Tensor none;
            be.fill(tdx, 5.f);
            op->backward(tx, tdy, tscale, tmean, tvar, tdx, none, none);
            check_close("backward dx (frozen scale and offset)", tdx, dx, tol);
          }};
}

// Group normalization: training forward (y and the group statistics), inference forward,
// backward with the parameter gradients and without them (frozen).
inline AgreementRow group_norm_row(std::string name, GroupNormDesc d) {
  return {"group_norm " + name, {GroupNormDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(97);
            const Device dev = be.device();
            const Shape xs{d.n, d.pixels, 1, d.c}, cs{d.c}, ss{d.stats()};
            Vec x = random_vec(xs.numel(), rng, -2.0, 3.0), dy = random_vec(xs.numel(), rng);
            Vec scale = random_vec(d.c, rng, 0.5, 1.5), offset = random_vec(d.c, rng);
            Tensor tx = to_tensor(x, xs, dev), tdy = to_tensor(dy, xs, dev);
            Tensor tscale = to_tensor(scale, cs, dev), toffset = to_tensor(offset, cs, dev);
            Tensor ty(xs, dev), tdx(xs, dev), tmean(ss, dev), tvar(ss, dev), tdscale(cs, dev), tdoffset(cs, dev);
            auto op = be.make(d);
            Vec mean, var;
            const Vec want = ref::group_norm_forward(d, x, scale, offset, &mean, &var);
            be.fill(ty, 7.f);
            op->forward_training(tx, tscale, toffset, ty, tmean, tvar);
            check_close("forward_training y", ty, want, tol);
            check_close("forward_training mean", tmean, mean, tol);
            check_close("forward_training var", tvar, var, tol);
            be.fill(ty, 7.f);
            op->forward_inference(tx, tscale, toffset, ty);
            check_close("forward_inference y", ty, want, tol);
            Vec dx, dscale, doffset;
            ref::group_norm_backward(d, x, dy, scale, dx, dscale, doffset);
            be.fill(tdscale, 123.f);  // overwritten, not accumulated
            be.fill(tdoffset, 123.f);
            be.fill(tdx, 5.f);
            op->backward(tx, tdy, tscale, tmean, tvar, tdx, tdscale, tdoffset);
            check_close("backward dx", tdx, dx, tol);
            check_close("backward dscale", tdscale, dscale, tol);
            check_close("backward doffset", tdoffset, doffset, tol);
            Tensor none;
            be.fill(tdx, 5.f);
            op->backward(tx, tdy, tscale, tmean, tvar, tdx, none, none);
            check_close("backward dx (frozen scale and offset)", tdx, dx, tol);
          }};
}

// PReLU: forward, backward with the alpha gradient and without it (frozen).
inline AgreementRow prelu_row(std::string name, PReluDesc d) {
  return {"prelu " + name, {PReluDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(101);
            const Device dev = be.device();
            const Shape xs{d.n, d.pixels, 1, d.c}, as{d.alphas};
            Vec x = random_vec(xs.numel(), rng, -2.0, 2.0), dy = random_vec(xs.numel(), rng);
            Vec alpha = random_vec(d.alphas, rng, -0.5, 0.8);
            Tensor tx = to_tensor(x, xs, dev), tdy = to_tensor(dy, xs, dev), ta = to_tensor(alpha, as, dev);
            Tensor ty(xs, dev), tdx(xs, dev), tda(as, dev);
            auto op = be.make(d);
            be.fill(ty, 7.f);
            op->forward(tx, ta, ty);
            check_close("forward", ty, ref::prelu_forward(d, x, alpha), tol);
            Vec dx, dalpha;
            ref::prelu_backward(d, x, alpha, dy, dx, dalpha);
            be.fill(tdx, 5.f);
            be.fill(tda, 123.f);  // overwritten, not accumulated
            op->backward(tx, ta, tdy, tdx, tda);
            check_close("backward dx", tdx, dx, tol);
            check_close("backward dalpha", tda, dalpha, tol);
            Tensor none;
            be.fill(tdx, 5.f);
            op->backward(tx, ta, tdy, tdx, none);
            check_close("backward dx (frozen alpha)", tdx, dx, tol);
          }};
}

// Channel shuffle and its inverse (the backward) against the reference; outputs are filled
// first so that an unwritten element shows.
inline AgreementRow shuffle_row(std::string name, ChannelShuffleDesc d) {
  return {"channel_shuffle " + name, {ChannelShuffleKernel::kOp}, [d](Backend& be, double tol) {
            Rng rng(79);
            const Device dev = be.device();
            const Shape s{d.pixels, d.c};
            Vec x = random_vec(s.numel(), rng), dy = random_vec(s.numel(), rng);
            Tensor y(s, dev), dx(s, dev);
            be.fill(y, 5.f);
            be.fill(dx, 5.f);
            be.channel_shuffle(to_tensor(x, s, dev), y, d);
            check_close("channel_shuffle", y, ref::channel_shuffle_forward(d, x), tol);
            be.channel_shuffle_backward(to_tensor(dy, s, dev), dx, d);
            check_close("channel_shuffle backward", dx, ref::channel_shuffle_backward(d, dy), tol);
          }};
}

// Channel slice and its gradient (zeros outside the channels) against the reference.
inline AgreementRow slice_row(std::string name, ChannelSliceDesc d) {
  return {"channel_slice " + name,
          {ChannelSliceKernel::kOp, ChannelSliceBackwardKernel::kOp},
          [d](Backend& be, double tol) {
            Rng rng(83);
            const Device dev = be.device();
            const Shape big{d.pixels, d.c}, small{d.pixels, d.count};
            Vec x = random_vec(big.numel(), rng), dy = random_vec(small.numel(), rng);
            Tensor y(small, dev), dx(big, dev);
            be.fill(y, 5.f);
            be.fill(dx, 5.f);
            be.channel_slice(to_tensor(x, big, dev), y, d);
            check_close("channel_slice", y, ref::channel_slice_forward(d, x), tol);
            be.channel_slice_backward(to_tensor(dy, small, dev), dx, d);
            check_close("channel_slice backward", dx, ref::channel_slice_backward(d, dy), tol);
          }};
}

// weighted: per-class weights in [0.2, 3); undefined: about a quarter of the labels are -1.
inline AgreementRow cross_entropy_row(std::string name, int64_t n, int64_t c, bool weighted = false,
                                      bool undefined = false) {
  return {"cross_entropy " + name, {CrossEntropyKernel::kOp}, [n, c, weighted, undefined](Backend& be, double tol) {
            Rng rng(53);
            const Device dev = be.device();
            Vec probs = ref::softmax_forward(n, c, random_vec(n * c, rng, -4.0, 4.0));
            std::vector<int32_t> labels(n);
            Tensor tl(Shape{n}, Device::cpu(), DType::kI32);
            for (int64_t i = 0; i < n; ++i) {
              labels[i] = rng.below(c);
              if (undefined && rng.below(4) == 0) labels[i] = -1;
              tl.data_i32()[i] = labels[i];
            }
            Vec weights = weighted ? random_vec(c, rng, 0.2, 3.0) : Vec{};
            LossOptions opt;
            opt.undefined_labels = undefined;
            if (weighted) opt.class_weights = to_tensor(weights, {c}, dev);
            Tensor tp = to_tensor(probs, {n, 1, 1, c}, dev), td(tp.shape(), dev);
            Tensor tl_dev = tl.to(dev);
            Vec dl;
            int64_t want_correct = 0, correct = -1, want_counted = 0, counted = -1;
            double want = ref::cross_entropy(n, c, probs, labels, &dl, &want_correct, weights, &want_counted);
            double got = be.cross_entropy(tp, tl_dev, td, &correct, opt, &counted);
            CHECK(got == Approx(want).epsilon(tol));
            CHECK(correct == want_correct);
            CHECK(counted == want_counted);
            check_close("dlogits", td, dl, tol);
          }};
}

}  // namespace agreement

}  // namespace dlt::test

// The light kernels' rows and the fused batch norm's, and the attention op's (they use the
// checks above).
#include "backend/attention_rows.h"
#include "backend/kernel_rows.h"

namespace dlt::test {

// The rows: several shapes per op, including odd sizes, stride 2, asymmetric padding,
// dilation 2 and fused relu. Small enough that the double reference runs in well under a
// second in total.
inline std::vector<AgreementRow> agreement_rows() {
  using namespace agreement;
  auto conv = [](int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t kh, int64_t kw) {
    ConvDesc d;
    d.n = n, d.h = h, d.w = w, d.c = c, d.k = k, d.kh = kh, d.kw = kw;
    return d;
  };
  std::vector<AgreementRow> rows;
  ConvDesc d = conv(2, 7, 6, 3, 4, 3, 3);
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  rows.push_back(conv_row("3x3 pad 1 odd sizes", d));
  d = conv(3, 9, 8, 5, 6, 3, 2);
  d.stride_h = d.stride_w = 2, d.pad_t = 0, d.pad_b = 1, d.pad_l = 2, d.pad_r = 1;
  rows.push_back(conv_row("3x2 stride 2 asymmetric padding", d));
  d = conv(2, 10, 9, 4, 5, 3, 3);
  d.dilation_h = d.dilation_w = 2, d.pad_t = d.pad_b = d.pad_l = d.pad_r = 2;
  rows.push_back(conv_row("3x3 dilation 2", d));
  d = conv(2, 11, 13, 4, 3, 3, 3);
  d.dilation_h = 2, d.stride_w = 2, d.pad_t = 1, d.pad_r = 1;
  rows.push_back(conv_row("dilation 2 x stride 2 mixed", d));
  d = conv(2, 8, 8, 16, 32, 5, 5);
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 2, d.fuse_relu = true;
  rows.push_back(conv_row("5x5 16->32 pad 2 fused relu", d));
  d = conv(2, 15, 15, 32, 32, 5, 5);
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 2;
  rows.push_back(conv_row("CIFAR conv2 shape, N=2", d));
  d = conv(4, 5, 5, 17, 7, 1, 1);
  rows.push_back(conv_row("1x1 17->7", d));
  d = conv(2, 12, 12, 3, 8, 5, 5);
  d.stride_h = d.stride_w = 2, d.pad_t = d.pad_l = 2, d.pad_b = d.pad_r = 1, d.fuse_relu = true;
  rows.push_back(conv_row("5x5 stride 2 'same' padding fused relu", d));
  // 3x3 stride 1 with 32+ channels takes the Winograd path on AVX-512; with 64+ channels the
  // blocked direct path below AVX-512 (conv_blocked_op.cpp; ctest's cpu_tests.isa_avx2).
  d = conv(2, 8, 8, 32, 48, 3, 3);
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  rows.push_back(conv_row("3x3 32->48 Winograd", d));
  d = conv(3, 6, 7, 64, 32, 3, 3);
  d.fuse_relu = true;
  rows.push_back(conv_row("3x3 64->32 Winograd no padding fused relu", d));
  d = conv(3, 6, 7, 64, 32, 3, 3);
  d.pad_t = d.pad_l = 1;
  rows.push_back(conv_row("3x3 64->32 asymmetric padding (direct, not Winograd)", d));
  d = conv(3, 6, 5, 64, 72, 3, 3);
  d.pad_t = d.pad_l = d.pad_r = 1, d.fuse_relu = true;
  rows.push_back(conv_row("3x3 64->72 5x5 output: blocked direct below AVX-512, asymmetric padding, fused relu", d));
  // dltrain's own Winograd below AVX-512 on CPUs with FMA (conv_winograd_op.cpp): 12x10 outputs.
  d = conv(2, 13, 10, 64, 72, 3, 3);
  d.pad_t = d.pad_l = d.pad_r = 1, d.fuse_relu = true;
  rows.push_back(conv_row("3x3 64->72 Winograd below AVX-512, asymmetric padding, fused relu", d));
  d = conv(2, 8, 8, 96, 64, 3, 3);
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  rows.push_back(conv_row("3x3 96->64 8x8 Winograd (both kinds)", d));
  // Grouped and depthwise (groups == C) convolutions: groupedConvolution2d.
  d = conv(2, 7, 6, 4, 6, 3, 3);
  d.groups = 2, d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  rows.push_back(conv_row("3x3 2 groups of 2->3", d));
  d = conv(2, 9, 8, 16, 16, 3, 3);
  d.groups = 16, d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  rows.push_back(conv_row("depthwise 3x3 16 channels pad 1", d));
  d = conv(2, 9, 10, 24, 24, 3, 3);
  d.groups = 24, d.stride_h = d.stride_w = 2, d.pad_t = d.pad_b = 1, d.pad_l = 0, d.pad_r = 1;
  rows.push_back(conv_row("depthwise 3x3 stride 2 'same' (asymmetric) padding", d));
  d = conv(2, 7, 7, 8, 16, 3, 3);
  d.groups = 8, d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  rows.push_back(conv_row("depthwise 3x3 multiplier 2", d));
  d = conv(3, 5, 5, 12, 8, 1, 1);
  d.groups = 4;
  rows.push_back(conv_row("1x1 4 groups of 3->2", d));
  d = conv(2, 8, 8, 32, 32, 3, 3);
  d.groups = 32, d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1, d.fuse_relu = true;
  rows.push_back(conv_row("depthwise 3x3 32 channels fused relu (not Winograd)", d));
  d = conv(2, 10, 9, 6, 9, 3, 3);
  d.groups = 3, d.dilation_h = d.dilation_w = 2, d.pad_t = d.pad_b = d.pad_l = d.pad_r = 2;
  rows.push_back(conv_row("3x3 3 groups of 2->3 dilation 2", d));
  d = conv(2, 8, 8, 64, 64, 3, 3);
  d.groups = 2, d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  rows.push_back(conv_row("3x3 2 groups of 32->32 (dense would be Winograd)", d));
  // A fused clippedRelu (MobileNet's ReLU6): the CPU's clip post-op (or the clip after a
  // Winograd / blocked op), the GPU's bias epilogue. Ceilings low enough that outputs reach 0,
  // the inside and the ceiling.
  d = conv(2, 9, 8, 16, 16, 3, 3);
  d.groups = 16, d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1, d.fuse_relu = true, d.relu_ceiling = 0.6f;
  rows.push_back(conv_row("depthwise 3x3 fused clipped relu 0.6", d));
  d = conv(3, 6, 6, 24, 40, 1, 1);
  d.fuse_relu = true, d.relu_ceiling = 2.f;
  rows.push_back(conv_row("1x1 24->40 fused clipped relu 2", d));
  d = conv(2, 8, 8, 64, 64, 3, 3);
  // (Winograd's rounding grows with the sums before the clip, up to about 30 here: a ceiling of 6
  // keeps the comparison's floor, a fraction of the largest output, above it.)
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1, d.fuse_relu = true, d.relu_ceiling = 6.f;
  rows.push_back(conv_row("3x3 64->64 fused clipped relu 6 (the Winograd shape)", d));

  rows.push_back(fc_row("37->11", {5, 37, 11, false}));
  rows.push_back(fc_row("4x4x8->10 fused relu", {3, 128, 10, true}));
  rows.push_back(fc_row("1 sample", {1, 64, 64, false}));

  auto pool = [](int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t s, PoolKind kind) {
    PoolDesc p;
    p.n = n, p.h = h, p.w = w, p.c = c, p.kh = p.kw = k, p.stride_h = p.stride_w = s, p.kind = kind;
    return p;
  };
  rows.push_back(pool_row("max 3x3 stride 2 on 15x15", pool(2, 15, 15, 5, 3, 2, PoolKind::kMax)));
  rows.push_back(pool_row("max 2x2 stride 2", pool(2, 8, 6, 16, 2, 2, PoolKind::kMax)));
  rows.push_back(pool_row("avg 3x3 stride 2", pool(2, 15, 15, 5, 3, 2, PoolKind::kAverage)));
  PoolDesc p = pool(2, 7, 9, 3, 3, 2, PoolKind::kAverage);
  p.pad_t = 1, p.pad_b = 0, p.pad_l = 0, p.pad_r = 2;
  rows.push_back(pool_row("avg asymmetric padding counts zeros", p));
  p.exclude_padding = true;
  rows.push_back(pool_row("avg asymmetric padding left out of the divisor", p));
  p.exclude_padding = false;
  p.kind = PoolKind::kMax;
  rows.push_back(pool_row("max asymmetric padding", p));
  p = pool(3, 4, 5, 8, 1, 1, PoolKind::kAverage);
  p.kh = 4, p.kw = 5;
  rows.push_back(pool_row("global average", p));
  p.kind = PoolKind::kMax;
  rows.push_back(pool_row("global max", p));
  p = pool(2, 14, 14, 24, 1, 1, PoolKind::kMax);
  p.kh = p.kw = 14;  // 196 window positions (u8 indices); 17x17 needs more
  rows.push_back(pool_row("global max 14x14", p));
  p = pool(2, 17, 17, 8, 1, 1, PoolKind::kMax);
  p.kh = p.kw = 17;
  rows.push_back(pool_row("global max 17x17 (289 window positions)", p));
  // averagePooling1d / maxPooling1d: a (S, 1) image, the window (k, 1): NextViT's 64 tokens
  // pooled 9 at a time, and padded windows of both kinds.
  p = pool(2, 64, 1, 32, 1, 1, PoolKind::kAverage);
  p.kh = p.stride_h = 9;
  rows.push_back(pool_row("1-D average of 64 tokens by 9", p));
  p = pool(3, 13, 1, 6, 1, 1, PoolKind::kAverage);
  p.kh = 3, p.stride_h = 2, p.pad_t = 1, p.pad_b = 2, p.exclude_padding = true;
  rows.push_back(pool_row("1-D average padded, left out of the divisor", p));
  p.exclude_padding = false, p.kind = PoolKind::kMax;
  rows.push_back(pool_row("1-D max padded", p));

  rows.push_back(batch_norm_row("odd sizes", {4, 5, 3, 7, 1e-5f, false}));
  rows.push_back(batch_norm_row("32 channels fused relu", {8, 4, 4, 32, 1e-5f, true}));
  rows.push_back(batch_norm_row("large epsilon", {2, 3, 3, 16, 0.1f, false}));

  rows.push_back(lrn_row("size 5 default", {2, 4, 3, 12, 5, 1e-4f, 0.75f, 2.f}));
  rows.push_back(lrn_row("size 5 strong", {2, 3, 3, 16, 5, 0.5f, 0.75f, 1.f}));
  rows.push_back(lrn_row("size 3 odd channels", {1, 2, 3, 5, 3, 1.f, 0.6f, 1.f}));
  rows.push_back(lrn_row("size 4 even window", {1, 2, 2, 9, 4, 1.f, 0.75f, 1.f}));
  // oneDNN 2.6 crashes on window 1 and gets the backward of 7..15 wrong for 20 channels
  rows.push_back(lrn_row("size 1", {1, 2, 2, 6, 1, 0.5f, 0.75f, 1.f}));
  rows.push_back(lrn_row("size 7 on 20 channels", {2, 2, 3, 20, 7, 0.5f, 0.75f, 1.f}));

  rows.push_back(act_row("relu", {1001, ActKind::kRelu, 0.f}));
  rows.push_back(act_row("leaky relu 0.1", {1001, ActKind::kLeakyRelu, 0.1f}));
  rows.push_back(act_row("elu 1.0", {777, ActKind::kElu, 1.f}));
  rows.push_back(act_row("elu 0.5", {100, ActKind::kElu, 0.5f}));
  rows.push_back(act_row("clipped relu 6", {1001, ActKind::kClippedRelu, 6.f}, 8.0));
  rows.push_back(act_row("clipped relu 1.5", {777, ActKind::kClippedRelu, 1.5f}));
  rows.push_back(act_row("sigmoid", {1001, ActKind::kSigmoid}, 8.0));
  rows.push_back(act_row("tanh", {777, ActKind::kTanh}, 5.0));
  rows.push_back(act_row("swish", {1001, ActKind::kSwish}, 8.0));
  rows.push_back(act_row("gelu", {1001, ActKind::kGelu}, 5.0));
  rows.push_back(act_row("gelu tanh", {777, ActKind::kGeluTanh}, 5.0));
  rows.push_back(act_row("hard sigmoid (PyTorch's)", {1001, ActKind::kHardSigmoid, 1.f / 6, 0.5f}, 5.0));
  rows.push_back(act_row("hard sigmoid (ONNX's default 0.2, 0.5)", {333, ActKind::kHardSigmoid, 0.2f, 0.5f}, 4.0));
  rows.push_back(act_row("hard swish", {1001, ActKind::kHardSwish}, 5.0));

  rows.push_back(softmax_row("7x10", 7, 10));
  rows.push_back(softmax_row("18x5 (spatial rows)", 18, 5));
  rows.push_back(softmax_row("3x1000", 3, 1000));

  rows.push_back(concat_row("3+5+1 channels", 2, 3, 3, {3, 5, 1}));
  rows.push_back(concat_row("16+32", 2, 4, 4, {16, 32}));

  rows.push_back(cross_entropy_row("100x10", 100, 10));
  rows.push_back(cross_entropy_row("3x1000", 3, 1000));
  rows.push_back(cross_entropy_row("weighted 700x11", 700, 11, true, false));
  rows.push_back(cross_entropy_row("undefined 700x11", 700, 11, false, true));
  rows.push_back(cross_entropy_row("weighted undefined 40000x11", 40000, 11, true, true));
  auto unpool = [](int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t s, int64_t pad) {
    PoolDesc d;
    d.n = n, d.h = h, d.w = w, d.c = c, d.kh = d.kw = k, d.stride_h = d.stride_w = s;
    d.pad_t = d.pad_b = d.pad_l = d.pad_r = pad;
    return d;
  };
  auto deconv = [](int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t kh, int64_t kw, int64_t s,
                   std::array<int64_t, 4> crop) {
    DeconvDesc d;
    d.n = n, d.h = h, d.w = w, d.c = c, d.k = k, d.kh = kh, d.kw = kw, d.stride_h = d.stride_w = s;
    d.crop_t = crop[0], d.crop_b = crop[1], d.crop_l = crop[2], d.crop_r = crop[3];
    return d;
  };
  rows.push_back(deconv_row("2x2/2 (U-Net up-convolution) 2x5x6x8->4", deconv(2, 5, 6, 8, 4, 2, 2, 2, {0, 0, 0, 0})));
  rows.push_back(deconv_row("3x3/1 crop 1 3x4x4x3->5", deconv(3, 4, 4, 3, 5, 3, 3, 1, {1, 1, 1, 1})));
  rows.push_back(
      deconv_row("4x3/2 asymmetric crop [1 2 0 1] 2x5x4x3->2", deconv(2, 5, 4, 3, 2, 4, 3, 2, {1, 2, 0, 1})));
  rows.push_back(deconv_row("3x3/3 (stride > filter - 1) 1x3x3x2->3", deconv(1, 3, 3, 2, 3, 3, 3, 3, {0, 0, 0, 0})));
  rows.push_back(deconv_row("2x2/2 4x16x16x64->32", deconv(4, 16, 16, 64, 32, 2, 2, 2, {0, 0, 0, 0})));
  auto crop = [](int64_t n, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow, int64_t top, int64_t left) {
    CropDesc d;
    d.n = n, d.h = h, d.w = w, d.c = c, d.out_h = oh, d.out_w = ow, d.top = top, d.left = left;
    return d;
  };
  rows.push_back(crop_row("center 2x9x8x3 -> 5x4", crop(2, 9, 8, 3, 5, 4, 2, 2)));
  rows.push_back(crop_row("corner 3x6x7x2 -> 6x3 at (0, 4)", crop(3, 6, 7, 2, 6, 3, 0, 4)));
  rows.push_back(crop_row("same size 1x4x4x5", crop(1, 4, 4, 5, 4, 4, 0, 0)));
  rows.push_back(crop_row("2x100x120x64 -> 96x112 (over 1M elements)", crop(2, 100, 120, 64, 96, 112, 2, 4)));
  rows.push_back(shuffle_row("2 groups of 3, 2x3x4 pixels", {24, 6, 2}));
  rows.push_back(shuffle_row("3 groups of 5", {7, 15, 3}));
  rows.push_back(shuffle_row("1 group (identity)", {5, 8, 1}));
  rows.push_back(shuffle_row("one channel per group", {5, 8, 8}));
  rows.push_back(shuffle_row("ShuffleNet stage 2: 2 groups of 58, 2x28x28", {1568, 116, 2}));
  rows.push_back(slice_row("first half of 8", {30, 8, 0, 4}));
  rows.push_back(slice_row("second half of 116", {98, 116, 58, 58}));
  rows.push_back(slice_row("middle 3 of 7", {12, 7, 2, 3}));
  rows.push_back(slice_row("one channel", {9, 5, 4, 1}));
  rows.push_back(slice_row("all channels", {9, 5, 0, 5}));
  rows.push_back(unpool_row("2x2/2 4x12x16x5", unpool(4, 12, 16, 5, 2, 2, 0)));
  rows.push_back(unpool_row("3x3/2 pad 1 2x9x7x3", unpool(2, 9, 7, 3, 3, 2, 1)));
  rows.push_back(unpool_row("2x2/2 2x96x128x64 (over 1M elements)", unpool(2, 96, 128, 64, 2, 2, 0)));
  using E = ProductDesc::Extent;
  const E F = ProductDesc::kFull, C = ProductDesc::kChannels, P = ProductDesc::kPixels;
  rows.push_back(multiply_row("2 equal inputs 2x15x7", {2, 15, 7, {F, F}}));
  rows.push_back(multiply_row("squeeze-and-excitation: 1x1x5 first, 3x24x5", {3, 24, 5, {C, F}}));
  rows.push_back(multiply_row("3 inputs, the middle repeated, odd C 2x15x9", {2, 15, 9, {F, C, F}}));
  rows.push_back(multiply_row("C = 1, repeated", {2, 12, 1, {F, C}}));
  rows.push_back(multiply_row("1x1 images", {4, 1, 6, {F, F}}));
  rows.push_back(multiply_row("9 inputs (two CUDA launches), 2 repeated", {2, 10, 3, {C, F, F, F, F, C, F, F, F}}));
  rows.push_back(multiply_row("2x56x56x24 repeated (many pixel groups)", {2, 3136, 24, {F, C}}));
  rows.push_back(multiply_row("gates: 2x15x7 times 2x15x1 (a value per pixel)", {2, 15, 7, {F, P}}));
  rows.push_back(multiply_row("outer: 1x1x6 times 3x20x1", {3, 20, 6, {C, P}}));
  rows.push_back(multiply_row("9 inputs (two CUDA launches), one per pixel, one per channel",
                              {2, 10, 3, {F, F, P, F, F, F, F, F, C}}));
  rows.push_back(multiply_row("2x56x56x96 times 2x56x56x1 (FocalNet's first stage)", {2, 3136, 96, {F, P}}));
  auto layer_norm = [](int64_t rows, int64_t length, int64_t c, float eps) {
    return LayerNormDesc{rows, length, c, eps};
  };
  rows.push_back(layer_norm_row("channel-only odd C 30x7", layer_norm(30, 7, 7, 1e-5f)));
  rows.push_back(layer_norm_row("channel-only C = 1", layer_norm(12, 1, 1, 1e-5f)));
  rows.push_back(layer_norm_row("channel-only ConvNeXt 98x96", layer_norm(98, 96, 96, 1e-6f)));
  rows.push_back(layer_norm_row("channel-only 3x1100 (a block per row on CUDA)", layer_norm(3, 1100, 1100, 1e-5f)));
  rows.push_back(layer_norm_row("spatial-channel 2 images of 5x4x6", layer_norm(2, 120, 6, 1e-5f)));
  rows.push_back(layer_norm_row("spatial-channel 3 images of 16x16x8", layer_norm(3, 2048, 8, 1e-5f)));
  rows.push_back(layer_norm_row("large epsilon 0.1, 20x16", layer_norm(20, 16, 16, 0.1f)));
  auto group_norm = [](int64_t n, int64_t pixels, int64_t c, int64_t groups, float eps) {
    return GroupNormDesc{n, pixels, c, groups, eps};
  };
  rows.push_back(group_norm_row("4 groups of 4, 2 images of 5x3", group_norm(2, 15, 16, 4, 1e-5f)));
  rows.push_back(group_norm_row("instance: 6 groups of 1, 3 images of 7", group_norm(3, 7, 6, 6, 1e-5f)));
  rows.push_back(group_norm_row("one group (all channels), 2 images of 3x3", group_norm(2, 9, 5, 1, 1e-5f)));
  rows.push_back(group_norm_row("one pixel, 8 groups of 4", group_norm(3, 1, 32, 8, 1e-5f)));
  rows.push_back(
      group_norm_row("2 images of 40x40, 32 groups of 2 (many pixel blocks)", group_norm(2, 1600, 64, 32, 1e-5f)));
  rows.push_back(group_norm_row("large epsilon 0.1, 3 groups of 5", group_norm(2, 4, 15, 3, 0.1f)));
  rows.push_back(prelu_row("shared alpha, 2 images of 5x7", {2, 5, 7, 1}));
  rows.push_back(prelu_row("alpha per channel, 3 images of 4x9", {3, 4, 9, 9}));
  rows.push_back(prelu_row("alpha per channel, 2 images of 30x30x16 (many row blocks)", {2, 900, 16, 16}));
  rows.push_back(prelu_row("one channel", {4, 6, 1, 1}));
  for (AgreementRow& r : attention_rows()) rows.push_back(std::move(r));
  for (AgreementRow& r : kernel_rows()) rows.push_back(std::move(r));
  return rows;
}

}  // namespace dlt::test
