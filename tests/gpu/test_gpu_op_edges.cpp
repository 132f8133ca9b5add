// (g) Edge cases of the cuDNN layer ops that the agreement table (op_agreement.h) leaves out:
// pooling padded by cuDNN itself (symmetric padding, alone and under an asymmetric excess),
// LRN at cuDNN's limits (Beta 0.01 and K 1e-5 exactly, window 16), one-image batches
// (the last partial batch), batch norm over a single value per channel, and synchronized
// batch norm's op (global_stats) against the CPU's.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "backend/op_agreement.h"
#include "gpu/gpu_test_util.h"

namespace dlt::test::gpu {

namespace {

using namespace agreement;

PoolDesc pool_desc(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t s, int64_t pt, int64_t pb, int64_t pl,
                   int64_t pr, PoolKind kind) {
  PoolDesc d;
  d.n = n, d.h = h, d.w = w, d.c = c, d.kh = d.kw = k, d.stride_h = d.stride_w = s;
  d.pad_t = pt, d.pad_b = pb, d.pad_l = pl, d.pad_r = pr, d.kind = kind;
  return d;
}

// d with average pooling's padding left out of each window's divisor (PaddingValue mean).
PoolDesc excluded(PoolDesc d) {
  d.exclude_padding = true;
  return d;
}

void run_rows(const std::vector<AgreementRow>& rows) {
  Backend& be = dut_backend();
  for (const AgreementRow& row : rows) {
    INFO("row: " << row.name << " on " << be.name());
    row.run(be, 1e-4);
    be.synchronize();
  }
}

}  // namespace

TEST_CASE("gpu layer ops: pooling padded by cuDNN and one-image batches", "[gpu][backend]") {
  // Symmetric padding is cuDNN's own (max must ignore it, average count it as zeros or leave
  // it out; corner windows of [-1, 1) inputs are often all negative); t1 b2 l2 r1 is cuDNN's 1
  // + an excess.
  const auto kMax = PoolKind::kMax, kAvg = PoolKind::kAverage;
  run_rows({pool_row("max 3x3 stride 1 padding 1", pool_desc(2, 6, 5, 4, 3, 1, 1, 1, 1, 1, kMax)),
            pool_row("avg 3x3 stride 1 padding 1", pool_desc(2, 6, 5, 4, 3, 1, 1, 1, 1, 1, kAvg)),
            pool_row("max 3x3 stride 2 padding t1 b2 l2 r1", pool_desc(2, 7, 8, 3, 3, 2, 1, 2, 2, 1, kMax)),
            pool_row("avg 3x3 stride 2 padding t1 b2 l2 r1", pool_desc(2, 7, 8, 3, 3, 2, 1, 2, 2, 1, kAvg)),
            pool_row("avg 3x3 stride 1 padding 1 left out", excluded(pool_desc(2, 6, 5, 4, 3, 1, 1, 1, 1, 1, kAvg))),
            pool_row("avg 3x3 stride 2 padding t1 b2 l2 r1 left out",
                     excluded(pool_desc(2, 7, 8, 3, 3, 2, 1, 2, 2, 1, kAvg))),
            pool_row("max 2x2 stride 2 one image", pool_desc(1, 4, 4, 3, 2, 2, 0, 0, 0, 0, kMax)),
            fc_row("1 sample fused relu", {1, 48, 7, true}), softmax_row("1 row", 1, 10),
            batch_norm_row("one image 3x3 fused relu", {1, 3, 3, 8, 1e-5f, true})});
}

TEST_CASE("gpu layer ops: convolution bias gradient over more positions than one pass of the grid", "[gpu][backend]") {
  // The bias gradient is our own per-channel sum (cuda::channel_sum): at most 256 groups of 8
  // rows, so 96x32x32 = 98304 positions make every thread go round its loop; 40 filters fill
  // one block of 32 channel lanes and part of a second; transposed convolution sums the same way.
  ConvDesc d;
  d.n = 96, d.h = 32, d.w = 32, d.c = 3, d.k = 40, d.kh = d.kw = 3;
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  DeconvDesc t;
  t.n = 64, t.h = 16, t.w = 16, t.c = 8, t.k = 36, t.kh = t.kw = 4, t.stride_h = t.stride_w = 2;
  run_rows({conv_row("3x3 pad 1, 96 images of 32x32, 40 filters", d),
            deconv_row("4x4 stride 2, 64 images 16x16 -> 34x34", t)});
}

TEST_CASE("gpu layer ops: LRN at cuDNN's limits", "[gpu][backend]") {
  // Beta 0.01 and K 1e-5 are cuDNN's (and MATLAB's) minima; as floats they round below them.
  run_rows({lrn_row("Beta 0.01, K 1e-5, window 16", {2, 2, 3, 20, 16, 1.f, 0.01f, 1e-5f})});
}

TEST_CASE("gpu layer ops: batch norm over one value per channel", "[gpu][backend]") {
  // One 1x1 image (a batch norm after a fully connected layer, last batch of one): mean = x,
  // variance 0 (cuDNN's unbiased running variance divides by m - 1 = 0), y = offset, dx = 0,
  // dscale = 0, doffset = dy. Exact up to rounding, so absolute bounds.
  Backend& be = dut_backend();
  const Device dev = be.device();
  const BatchNormDesc d{1, 1, 1, 6, 1e-5f, false};
  Rng rng(53);
  const Shape cs{d.c}, xs{1, 1, 1, d.c};
  Vec x = random_vec(d.c, rng, -2.0, 3.0), dy = random_vec(d.c, rng);
  Vec scale = random_vec(d.c, rng, 0.5, 1.5), offset = random_vec(d.c, rng);
  Tensor tx = to_tensor(x, xs, dev), tdy = to_tensor(dy, xs, dev), tscale = to_tensor(scale, cs, dev);
  Tensor ty(xs, dev), tmean(cs, dev), tvar(cs, dev), tdx(xs, dev), tds(cs, dev), tdo(cs, dev);
  auto op = be.make(d);
  op->forward_training(tx, tscale, to_tensor(offset, cs, dev), ty, tmean, tvar);
  op->backward(tx, tdy, tscale, tmean, tvar, tdx, tds, tdo);
  const Vec y = to_vec(ty), mean = to_vec(tmean), var = to_vec(tvar), dx = to_vec(tdx);
  const Vec ds = to_vec(tds), doff = to_vec(tdo);
  for (int64_t c = 0; c < d.c; ++c) {
    INFO("channel " << c << " on " << be.name());
    CHECK(std::fabs(y[c] - offset[c]) <= 1e-5);
    CHECK(std::fabs(mean[c] - x[c]) <= 1e-5);
    CHECK(std::fabs(var[c]) <= 1e-6);  // also false for NaN
    CHECK(std::fabs(dx[c]) <= 1e-5);
    CHECK(std::fabs(ds[c]) <= 1e-5);
    CHECK(std::fabs(doff[c] - dy[c]) <= 1e-6);
  }
}

TEST_CASE("gpu layer ops: synchronized batch norm's op (global_stats) agrees with the CPU's", "[gpu][backend]") {
  // Normalizes with the given statistics and treats them as constants in backward; the relu
  // mask is the GPU's recomputed sign against oneDNN's workspace.
  for (bool relu : {false, true}) {
    const BatchNormDesc d{3, 4, 3, 12, 1e-5f, relu, true};
    INFO("fuse_relu " << relu << " on " << dut_backend().name());
    Rng rng(59);
    const Shape xs{d.n, d.h, d.w, d.c}, cs{d.c};
    auto x = random_pair(xs, rng, -2.f, 3.f), dy = random_pair(xs, rng);
    auto scale = random_pair(cs, rng, 0.5f, 1.5f), offset = random_pair(cs, rng);
    auto mean = random_pair(cs, rng, 0.f, 1.f), var = random_pair(cs, rng, 0.5f, 2.f);
    struct Out {
      Tensor y, dx, ds, doff;
    };
    auto run = [&](Backend& be, const Tensor& tx, const Tensor& tdy, const Tensor& ts, const Tensor& to,
                   const Tensor& tm, const Tensor& tv) {
      const Device dev = be.device();
      Out o{Tensor(xs, dev), Tensor(xs, dev), Tensor(cs, dev), Tensor(cs, dev)};
      Tensor m = tm.to(dev), v = tv.to(dev);  // forward_training takes them non-const
      auto op = be.make(d);
      op->forward_training(tx, ts, to, o.y, m, v);
      op->backward(tx, tdy, ts, m, v, o.dx, o.ds, o.doff);
      be.synchronize();
      return o;
    };
    Out want = run(cpu_be(), x.cpu, dy.cpu, scale.cpu, offset.cpu, mean.cpu, var.cpu);
    Out got = run(dut_backend(), x.dev, dy.dev, scale.dev, offset.dev, mean.dev, var.dev);
    CHECK(compare_tensors(got.y, want.y).rel <= 1e-4);
    CHECK(compare_tensors(got.dx, want.dx).rel <= 1e-4);
    CHECK(compare_tensors(got.ds, want.ds).rel <= 1e-4);
    CHECK(compare_tensors(got.doff, want.doff).rel <= 1e-4);
  }
}

}  // namespace dlt::test::gpu
