// Hand-computed cases for conv, pooling (padding counts as zeros for average) and LRN on the
// CPU backend: tiny inputs whose outputs can be checked on paper.
#include <catch2/catch.hpp>

#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "support/reference_ops.h"
#include "support/tensor_utils.h"

namespace dlt::test {
namespace {

Tensor iota9() {  // 1x3x3x1 holding 1..9 row-major
  Tensor t(Shape{1, 3, 3, 1});
  for (int i = 0; i < 9; ++i) t.data()[i] = static_cast<float>(i + 1);
  return t;
}

void check_values(const Tensor& t, const Vec& want) {
  INFO("got " << compare(t, want).str());
  REQUIRE(t.numel() == static_cast<int64_t>(want.size()));
  CHECK(all_close(to_vec(t), want, 1e-6, 1e-6));
}

}  // namespace

TEST_CASE("conv 3x3 input with a 2x2 kernel by hand", "[backend][cpu]") {
  Backend& be = cpu_backend();
  ConvDesc d;
  d.h = d.w = 3, d.kh = d.kw = 2;
  auto op = be.make(d);
  Tensor x = iota9();
  Tensor w = to_tensor({1, 2, 3, 4}, {1, 2, 2, 1});
  Tensor b = to_tensor({0.5}, {1});
  Tensor y(Shape{1, 2, 2, 1});
  op->forward(x, w, b, y);
  // y00 = 1*1 + 2*2 + 4*3 + 5*4 = 37, and so on, plus the bias
  check_values(y, {37.5, 47.5, 67.5, 77.5});

  Tensor dy = to_tensor({1, 1, 1, 1}, {1, 2, 2, 1});
  Tensor dx(x.shape()), dw(w.shape()), db(b.shape());
  op->backward_data(dy, w, dx);
  check_values(dx, {1, 3, 2, 4, 10, 6, 3, 7, 4});
  op->backward_weights(x, dy, dw, db);
  check_values(dw, {12, 16, 24, 28});
  check_values(db, {4});
}

TEST_CASE("transposed conv by hand: stride 2, then cropping [1 0 0 1]", "[backend][cpu]") {
  Backend& be = cpu_backend();
  DeconvDesc d;
  d.h = d.w = 2, d.kh = d.kw = 2, d.stride_h = d.stride_w = 2;
  Tensor x = to_tensor({1, 2, 3, 4}, {1, 2, 2, 1});
  Tensor w = to_tensor({1, 2, 3, 4}, {1, 2, 2, 1});
  Tensor b = to_tensor({0.5}, {1});
  // Each input pixel v writes v * w into its own 2x2 block of the 4x4 output.
  REQUIRE(d.out_h() == 4);
  Tensor y(Shape{1, 4, 4, 1});
  be.make(d)->forward(x, w, b, y);
  check_values(y, {1.5, 2.5, 2.5, 4.5, 3.5, 4.5, 6.5, 8.5, 3.5, 6.5, 4.5, 8.5, 9.5, 12.5, 12.5, 16.5});

  // Crop the top row and the right column: 3x3.
  d.crop_t = 1, d.crop_r = 1;
  REQUIRE(d.out_h() == 3);
  REQUIRE(d.out_w() == 3);
  auto op = be.make(d);
  Tensor yc(Shape{1, 3, 3, 1});
  op->forward(x, w, b, yc);
  check_values(yc, {3.5, 4.5, 6.5, 3.5, 6.5, 4.5, 9.5, 12.5, 12.5});
  // dy = 1..9: dx[i, j] = sum of dy[2i + a - 1, 2j + b] * w[a, b] over the taps kept, e.g.
  // dx[0, 0] = dy[0, 0] * w[1, 0] + dy[0, 1] * w[1, 1] = 1 * 3 + 2 * 4 = 11.
  Tensor dy = to_tensor({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  Tensor dx(x.shape()), dw(w.shape()), db(b.shape());
  op->backward_data(dy, w, dx);
  check_values(dx, {11, 9, 67, 33});
  // dw[a, b] = sum of x[i, j] * dy[2i + a - 1, 2j + b]: dw[0, 0] = 3 * 4 + 4 * 6 = 36.
  op->backward_weights(x, dy, dw, db);
  check_values(dw, {36, 15, 64, 26});
  check_values(db, {45});
}

TEST_CASE("conv with asymmetric padding, stride 2 and fused relu by hand", "[backend][cpu]") {
  Backend& be = cpu_backend();
  ConvDesc d;
  d.h = d.w = 3, d.kh = d.kw = 2, d.stride_h = d.stride_w = 2;
  d.pad_t = 1, d.pad_l = 1, d.fuse_relu = true;  // out = (3 + 1 - 2) / 2 + 1 = 2
  REQUIRE(d.out_h() == 2);
  auto op = be.make(d);
  Tensor w = to_tensor({1, -1, -1, 1}, {1, 2, 2, 1});
  Tensor b = to_tensor({0}, {1});
  Tensor y(Shape{1, 2, 2, 1});
  op->forward(iota9(), w, b, y);
  // windows start at (-1,-1), (-1,1), (1,-1), (1,1):
  // [0 0; 0 1] -> 1 ; [0 0; 2 3] -> -2 + 3 = 1 ; [0 4; 0 7] -> -4 + 7 = 3 ; [5 6; 8 9] -> 5-6-8+9 = 0
  check_values(y, {1, 1, 3, 0});
  w = to_tensor({-1, 0, 0, 0}, {1, 2, 2, 1});  // only the top-left tap: -x(window origin)
  op->forward(iota9(), w, b, y);
  check_values(y, {0, 0, 0, 0});  // 0 (padding), 0 (padding), 0 (padding), relu(-5) = 0
}

TEST_CASE("max and average pooling by hand, padding counts as zeros", "[backend][cpu]") {
  Backend& be = cpu_backend();
  PoolDesc d;
  d.h = d.w = 3, d.kh = d.kw = 2;
  Tensor y(Shape{1, 2, 2, 1});
  auto max1 = be.make(d);
  max1->forward(iota9(), y, false);
  check_values(y, {5, 6, 8, 9});

  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1, d.stride_h = d.stride_w = 2;
  REQUIRE(d.out_h() == 2);
  auto maxp = be.make(d);
  maxp->forward(iota9(), y, true);
  check_values(y, {1, 3, 7, 9});
  Tensor dx(Shape{1, 3, 3, 1});
  maxp->backward(to_tensor({1, 2, 3, 4}, {1, 2, 2, 1}), dx);
  check_values(dx, {1, 0, 2, 0, 0, 0, 3, 0, 4});

  d.kind = PoolKind::kAverage;
  auto avg = be.make(d);
  avg->forward(iota9(), y, true);
  // every window has 4 taps; padded ones add 0: 1/4, (2+3)/4, (4+7)/4, (5+6+8+9)/4
  check_values(y, {0.25, 1.25, 2.75, 7.0});
  avg->backward(to_tensor({4, 8, 12, 16}, {1, 2, 2, 1}), dx);
  check_values(dx, {1, 2, 2, 3, 4, 4, 3, 4, 4});

  d.exclude_padding = true;  // each window divided by its taps inside the image
  auto mean = be.make(d);
  mean->forward(iota9(), y, true);
  // 1/1, (2+3)/2, (4+7)/2, (5+6+8+9)/4
  check_values(y, {1, 2.5, 5.5, 7.0});
  mean->backward(to_tensor({4, 8, 12, 16}, {1, 2, 2, 1}), dx);
  check_values(dx, {4, 4, 4, 6, 4, 4, 6, 4, 4});
}

// Max-pooling backward against the reference (tests/support/reference_ops): each output's
// gradient goes to its window's maximum (distinct values, so no ties). Overlapping 3x3 stride-2 windows, asymmetric
// padding, 19 channels (vector lanes and a remainder), several images. Below avx512_core this
// runs dltrain's own backward (pool_op.cpp; CTest cpu_tests.isa_avx2), above it oneDNN's.
TEST_CASE("max-pooling backward routes each gradient to its window's maximum", "[backend][cpu]") {
  Backend& be = cpu_backend();
  PoolDesc d;
  d.n = 3, d.h = 9, d.w = 8, d.c = 19, d.kh = d.kw = 3, d.stride_h = d.stride_w = 2;
  d.pad_t = 1, d.pad_b = 0, d.pad_l = 0, d.pad_r = 1;
  const int64_t oh = d.out_h(), ow = d.out_w();
  Tensor x(Shape{d.n, d.h, d.w, d.c}), y(Shape{d.n, oh, ow, d.c}), dy(Shape{d.n, oh, ow, d.c});
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = static_cast<float>((i * 7919) % 100003) * 1e-3f;
  for (int64_t i = 0; i < dy.numel(); ++i) dy.data()[i] = 1.f + static_cast<float>(i % 13);
  auto op = be.make(d);
  op->forward(x, y, true);
  Tensor dx(Shape{d.n, d.h, d.w, d.c});
  for (int64_t i = 0; i < dx.numel(); ++i) dx.data()[i] = std::numeric_limits<float>::quiet_NaN();
  op->backward(dy, dx);
  const Vec xs = to_vec(x);
  CHECK(all_close(to_vec(y), ref::pool_forward(d, xs), 0, 0));
  check_values(dx, ref::pool_backward(d, xs, to_vec(dy)));
}

TEST_CASE("LRN across channels by hand", "[backend][cpu]") {
  Backend& be = cpu_backend();
  LrnDesc d;
  d.c = 3, d.size = 3, d.alpha = 1.f, d.beta = 1.f, d.k = 1.f;
  auto op = be.make(d);
  Tensor x = to_tensor({1, 2, 3}, {1, 1, 1, 3});
  Tensor y(x.shape());
  op->forward(x, y, false);
  // s0 = 1 + (1 + 4)/3 = 8/3, s1 = 1 + (1 + 4 + 9)/3 = 17/3, s2 = 1 + (4 + 9)/3 = 16/3
  check_values(y, {3.0 / 8.0, 6.0 / 17.0, 9.0 / 16.0});
  d.beta = 0.5f;
  auto op2 = be.make(d);
  op2->forward(x, y, true);
  check_values(y, {1 / std::sqrt(8.0 / 3), 2 / std::sqrt(17.0 / 3), 3 / std::sqrt(16.0 / 3)});
}

TEST_CASE("cpu ops report oneDNN implementations and reject wrong sizes", "[backend][cpu]") {
  Backend& be = cpu_backend();
  ConvDesc d;
  d.n = 2, d.h = d.w = 8, d.c = 16, d.k = 16, d.kh = d.kw = 3;
  auto op = be.make(d);
  const std::string info = impl_info(*op);
  INFO(info);
  CHECK(info.find("fwd=") != std::string::npos);
  CHECK(info.find("bwd_w=") != std::string::npos);
  Tensor x(Shape{2, 8, 8, 15}), w(Shape{16, 3, 3, 16}), b(Shape{16}), y(Shape{2, 6, 6, 16});
  CHECK_THROWS_AS(op->forward(x, w, b, y), Error);
}

}  // namespace dlt::test
