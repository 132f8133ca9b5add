// Precision: mixed on the CPU backend (ConvDesc::bf16, FcDesc::bf16). The ops must equal a
// double-precision reference run on inputs rounded to bfloat16 (so: bfloat16 operands, float32
// sums), and differ from the unrounded reference by bfloat16's rounding (so the rounding ran).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/op_agreement.h"
#include "support/reference_ops.h"
#include "support/skip.h"
#include "support/tensor_utils.h"

using namespace dlt;
using namespace dlt::test;

namespace {

// float32 -> bfloat16 -> float32 with round-to-nearest-even (what oneDNN's reorder does).
double round_bf16(double v) {
  float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}
Vec rounded(const Vec& v) {
  Vec out(v);
  for (double& e : out) e = round_bf16(static_cast<float>(e));
  return out;
}

// Tolerances: against the rounded-input reference only float32 summation order remains;
// against the exact reference bfloat16's 8-bit mantissa (relative 2^-9 per operand) shows.
constexpr double kSumTol = 2e-5;
constexpr double kMixedTol = 1e-2;
constexpr double kMinRoundingSeen = 1e-4;

void expect_mixed(const char* what, const Tensor& got, const Vec& want_rounded, const Vec& want_exact) {
  Comparison r = compare(got, want_rounded), e = compare(got, want_exact);
  INFO(what << ": vs rounded inputs " << r.str() << "; vs exact " << e.str());
  CHECK(r.rel <= kSumTol);
  CHECK(e.rel <= kMixedTol);
  CHECK(e.rel >= kMinRoundingSeen);
}

// Whether oneDNN has bfloat16 kernels at the ISA it dispatches to (DNNL_MAX_CPU_ISA caps it).
bool cpu_has_bf16_kernels() { return cpu_isa().bf16; }
#define SKIP_WITHOUT_BF16()            \
  DLT_SKIP_IF(!cpu_has_bf16_kernels(), \
              "no bfloat16 kernels: oneDNN runs this CPU at " << cpu_isa().name << " (they need avx512_core)")

void check_conv(ConvDesc d) {
  d.bf16 = true;
  Rng rng(41);
  const int64_t oh = d.out_h(), ow = d.out_w();
  Vec x = random_vec(d.n * d.h * d.w * d.c, rng), w = random_vec(d.weight_numel(), rng);
  Vec b = random_vec(d.k, rng), dy = random_vec(d.n * oh * ow * d.k, rng);
  Tensor tx = to_tensor(x, {d.n, d.h, d.w, d.c}), tw = to_tensor(w, {d.k, d.kh, d.kw, d.group_c()});
  Tensor tb = to_tensor(b, {d.k}), ty(Shape{d.n, oh, ow, d.k}), tdx(tx.shape());
  Tensor tdw(tw.shape()), tdb(tb.shape());
  auto op = cpu_backend().make(d);
  INFO(impl_info(*op));
  CHECK(impl_info(*op).find("bf16") != std::string::npos);
  const Vec xr = rounded(x), wr = rounded(w);
  op->forward(tx, tw, tb, ty);
  Vec y_exact = ref::conv_forward(d, x, w, b);
  expect_mixed("forward", ty, ref::conv_forward(d, xr, wr, b), y_exact);
  if (d.fuse_relu) dy = agreement::relu_mask(dy, to_vec(ty));
  const Vec dyr = rounded(dy);
  Tensor tdy = to_tensor(dy, ty.shape());
  op->backward_data(tdy, tw, tdx);
  expect_mixed("backward_data", tdx, ref::conv_backward_data(d, dyr, wr), ref::conv_backward_data(d, dy, w));
  op->backward_weights(tx, tdy, tdw, tdb);
  Vec dw_r, db_r, dw_e, db_e;
  ref::conv_backward_weights(d, xr, dyr, dw_r, db_r);
  ref::conv_backward_weights(d, x, dy, dw_e, db_e);
  expect_mixed("backward_weights dw", tdw, dw_r, dw_e);
  INFO("db " << compare(tdb, db_e).str());
  CHECK(compare(tdb, db_e).rel <= kMixedTol);
  if (d.fuse_relu) return;
  // Inference's residual sum (ConvDesc::inference_sum) on the same rounded operands: the
  // rounded-input convolution, plus r, through the ReLU.
  ConvDesc sd = d;
  sd.inference_sum = sd.sum_relu = true;
  auto sum_op = cpu_backend().make(sd);
  INFO(impl_info(*sum_op));
  const Vec r = random_vec(d.n * oh * ow * d.k, rng);
  Tensor tr = to_tensor(r, ty.shape()), ts(ty.shape());
  sum_op->forward_sum(tx, tw, tb, tr, ts);
  Vec want = ref::conv_forward(d, xr, wr, b);
  int64_t negative = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] += r[i];
    negative += want[i] < 0;
    want[i] = std::max(want[i], 0.0);
  }
  CHECK(negative > 0);
  INFO("forward_sum " << compare(ts, want).str());
  CHECK(compare(ts, want).rel <= kSumTol);
}

}  // namespace

TEST_CASE("CPU conv with Precision mixed: bfloat16 operands, float32 sums", "[backend][mixed][skippable]") {
  SKIP_WITHOUT_BF16();
  CHECK(cpu_isa().winograd);  // oneDNN 2.6 has Winograd wherever it has bfloat16 (avx512_core)
  ConvDesc d;
  SECTION("3x3 pad 1 dilation 2, 32 -> 48 (not a Winograd shape)") {
    d.n = 2, d.h = 9, d.w = 7, d.c = 32, d.k = 48, d.kh = d.kw = 3;
    d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
    d.dilation_h = d.dilation_w = 2;
    check_conv(d);
  }
  SECTION("3x2 stride 2, asymmetric padding") {
    d.n = 3, d.h = 11, d.w = 10, d.c = 5, d.k = 6, d.kh = 3, d.kw = 2;
    d.stride_h = d.stride_w = 2, d.pad_t = 1, d.pad_b = 0, d.pad_l = 0, d.pad_r = 1;
    check_conv(d);
  }
  SECTION("5x5 3 -> 16 pad 2, fused relu") {
    d.n = 2, d.h = d.w = 12, d.c = 3, d.k = 16, d.kh = d.kw = 5;
    d.pad_t = d.pad_b = d.pad_l = d.pad_r = 2;
    d.fuse_relu = true;
    check_conv(d);
  }
  SECTION("1x1 17 -> 7") {
    d.n = 4, d.h = d.w = 5, d.c = 17, d.k = 7;
    check_conv(d);
  }
  SECTION("depthwise 3x3 32 channels pad 1, fused relu") {
    d.n = 2, d.h = d.w = 9, d.c = d.k = d.groups = 32, d.kh = d.kw = 3;
    d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
    d.fuse_relu = true;
    check_conv(d);
  }
  SECTION("depthwise 3x3 stride 2, multiplier 2") {
    d.n = 2, d.h = d.w = 10, d.c = d.groups = 16, d.k = 32, d.kh = d.kw = 3;
    d.stride_h = d.stride_w = 2, d.pad_t = d.pad_l = 0, d.pad_b = d.pad_r = 1;
    check_conv(d);
  }
  SECTION("3x3 4 groups of 8 -> 16") {
    d.n = 2, d.h = d.w = 8, d.c = 32, d.k = 64, d.groups = 4, d.kh = d.kw = 3;
    d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
    check_conv(d);
  }
}

TEST_CASE("CPU fullyConnected with Precision mixed: bfloat16 operands, float32 sums", "[backend][mixed][skippable]") {
  SKIP_WITHOUT_BF16();
  for (FcDesc d : {FcDesc{5, 96, 11, false, true}, FcDesc{3, 128, 10, true, true}, FcDesc{1, 64, 64, false, true}}) {
    INFO("fc " << d.n << " x " << d.in << " -> " << d.out << (d.fuse_relu ? " fused relu" : ""));
    Rng rng(43);
    Vec x = random_vec(d.n * d.in, rng), w = random_vec(d.out * d.in, rng);
    Vec b = random_vec(d.out, rng), dy = random_vec(d.n * d.out, rng);
    Tensor tx = to_tensor(x, {d.n, d.in}), tw = to_tensor(w, {d.out, d.in}), tb = to_tensor(b, {d.out});
    Tensor ty(Shape{d.n, d.out}), tdx(tx.shape()), tdw(tw.shape()), tdb(tb.shape());
    auto op = cpu_backend().make(d);
    INFO(impl_info(*op));
    const Vec xr = rounded(x), wr = rounded(w);
    op->forward(tx, tw, tb, ty);
    expect_mixed("forward", ty, ref::fc_forward(d, xr, wr, b), ref::fc_forward(d, x, w, b));
    if (d.fuse_relu) dy = agreement::relu_mask(dy, to_vec(ty));
    const Vec dyr = rounded(dy);
    Tensor tdy = to_tensor(dy, ty.shape());
    op->backward_data(tdy, tw, tdx);
    expect_mixed("backward_data", tdx, ref::fc_backward_data(d, dyr, wr), ref::fc_backward_data(d, dy, w));
    op->backward_weights(tx, tdy, tdw, tdb);
    Vec dw_r, db_r, dw_e, db_e;
    ref::fc_backward_weights(d, xr, dyr, dw_r, db_r);
    ref::fc_backward_weights(d, x, dy, dw_e, db_e);
    expect_mixed("backward_weights dw", tdw, dw_r, dw_e);
    CHECK(compare(tdb, db_e).rel <= kMixedTol);
  }
}

// Where oneDNN has no bfloat16 kernels, the ops refuse Precision mixed with one line naming the ISA.
TEST_CASE("Precision mixed is refused at an ISA without bfloat16 kernels", "[backend][mixed][skippable]") {
  DLT_SKIP_IF(cpu_has_bf16_kernels(), "oneDNN has bfloat16 kernels at " << cpu_isa().name << ": nothing to refuse");
  ConvDesc c;
  c.n = 1, c.h = c.w = 4, c.c = 3, c.k = 2, c.kh = c.kw = 3, c.bf16 = true;
  const std::string want = "Precision mixed: oneDNN runs this CPU at " + cpu_isa().name + ", which has no bfloat16";
  CHECK_THROWS_WITH(cpu_backend().make(c), Catch::Contains(want));
  CHECK_THROWS_WITH(cpu_backend().make(FcDesc{2, 8, 3, false, true}), Catch::Contains(want));
}

namespace {

ConvDesc winograd_shape_bf16() {
  ConvDesc d;
  d.n = 2, d.h = 9, d.w = 7, d.c = 32, d.k = 48, d.kh = d.kw = 3;
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  d.bf16 = true;
  return d;
}

}  // namespace

TEST_CASE("Precision mixed keeps float32 Winograd for 3x3 stride-1 convs on CPUs without AMX",
          "[backend][mixed][skippable]") {
  DLT_SKIP_IF(!cpu_isa().winograd, "oneDNN has no Winograd at " << cpu_isa().name << " (it needs avx512_core)");
  DLT_SKIP_IF(cpu_isa().amx, "this CPU has AMX, where bfloat16 direct convolution is chosen instead");
  const ConvDesc d = winograd_shape_bf16();
  auto op = cpu_backend().make(d);
  INFO(impl_info(*op));
  CHECK(impl_info(*op).find("amx") == std::string::npos);
  CHECK(impl_info(*op).find("wino") != std::string::npos);
  // float32 Winograd: float32 accuracy, not bfloat16's.
  Rng rng(47);
  Vec x = random_vec(d.n * d.h * d.w * d.c, rng), w = random_vec(d.k * 9 * d.c, rng), b = random_vec(d.k, rng);
  Tensor tx = to_tensor(x, {d.n, d.h, d.w, d.c}), tw = to_tensor(w, {d.k, 3, 3, d.c}), tb = to_tensor(b, {d.k});
  Tensor ty(Shape{d.n, d.out_h(), d.out_w(), d.k});
  op->forward(tx, tw, tb, ty);
  Comparison c = compare(ty, ref::conv_forward(d, x, w, b));
  INFO(c.str());
  CHECK(c.rel <= 1e-4);
}

TEST_CASE("Precision mixed prefers bfloat16 direct convolution to Winograd on CPUs with AMX",
          "[backend][mixed][skippable]") {
  DLT_SKIP_IF(!cpu_isa().amx, "oneDNN runs this CPU at " << cpu_isa().name << ", without AMX");
  auto op = cpu_backend().make(winograd_shape_bf16());
  INFO(impl_info(*op));
  CHECK(impl_info(*op).find("amx") != std::string::npos);
  CHECK(impl_info(*op).find("bf16") != std::string::npos);
}

namespace {

// Writes v into t's own storage, so the op sees the same pointer with new contents.
void refill(Tensor& t, const Vec& v) {
  float* p = t.data();
  for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<float>(v[i]);
}

}  // namespace

// The ops keep forward's bfloat16 x (and fc's w) for backward, and one bfloat16 dy for both
// backward passes. A later step with new contents in the same tensors must not see stale
// copies, including a step whose only backward pass is the one that did not convert dy before.
TEST_CASE("Precision mixed: the ops' reused bfloat16 copies are never stale", "[backend][mixed][skippable]") {
  SKIP_WITHOUT_BF16();
  ConvDesc d;
  d.n = 2, d.h = d.w = 8, d.c = 6, d.k = 5, d.kh = d.kw = 3, d.stride_h = d.stride_w = 2;
  d.bf16 = true;
  FcDesc f{3, 40, 7, false, true};
  auto conv = cpu_backend().make(d);
  auto fc = cpu_backend().make(f);
  const int64_t oh = d.out_h(), ow = d.out_w();
  Tensor x(Shape{d.n, d.h, d.w, d.c}), w(Shape{d.k, 3, 3, d.c}), b(Shape{d.k}), y(Shape{d.n, oh, ow, d.k});
  Tensor dy(y.shape()), dx(x.shape()), dw(w.shape()), db(b.shape());
  Tensor fx(Shape{f.n, f.in}), fw(Shape{f.out, f.in}), fb(Shape{f.out}), fy(Shape{f.n, f.out});
  Tensor fdy(fy.shape()), fdx(fx.shape()), fdw(fw.shape()), fdb(fb.shape());
  Rng rng(53);
  // The backward passes per step, in order: "wd" = weights then data (the layers' order).
  // Step 1 leaves its dy copy unused; step 2 (data only) must still convert the new dy.
  for (std::string passes : {"wd", "w", "d", "dw"}) {
    INFO("backward passes " << passes);
    Vec xv = random_vec(x.numel(), rng), wv = random_vec(w.numel(), rng), bv = random_vec(d.k, rng);
    Vec dyv = random_vec(dy.numel(), rng);
    refill(x, xv), refill(w, wv), refill(b, bv), refill(dy, dyv);
    Vec fxv = random_vec(fx.numel(), rng), fwv = random_vec(fw.numel(), rng), fbv = random_vec(f.out, rng);
    Vec fdyv = random_vec(fdy.numel(), rng);
    refill(fx, fxv), refill(fw, fwv), refill(fb, fbv), refill(fdy, fdyv);
    conv->forward(x, w, b, y);
    fc->forward(fx, fw, fb, fy);
    CHECK(compare(y, ref::conv_forward(d, rounded(xv), rounded(wv), bv)).rel <= kSumTol);
    CHECK(compare(fy, ref::fc_forward(f, rounded(fxv), rounded(fwv), fbv)).rel <= kSumTol);
    for (char pass : passes) {
      if (pass == 'w') {
        conv->backward_weights(x, dy, dw, db);
        fc->backward_weights(fx, fdy, fdw, fdb);
        Vec dw_r, db_r;
        ref::conv_backward_weights(d, rounded(xv), rounded(dyv), dw_r, db_r);
        CHECK(compare(dw, dw_r).rel <= kSumTol);
        ref::fc_backward_weights(f, rounded(fxv), rounded(fdyv), dw_r, db_r);
        CHECK(compare(fdw, dw_r).rel <= kSumTol);
      } else {
        conv->backward_data(dy, w, dx);
        fc->backward_data(fdy, fw, fdx);
        CHECK(compare(dx, ref::conv_backward_data(d, rounded(dyv), rounded(wv))).rel <= kSumTol);
        CHECK(compare(fdx, ref::fc_backward_data(f, rounded(fdyv), rounded(fwv))).rel <= kSumTol);
      }
    }
  }
}
