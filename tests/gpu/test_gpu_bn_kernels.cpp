// (d) Batch norm in training by dltrain's own kernels (BatchNormKernels: dltrain,
// cuda_bn_kernels.h): the agreement table's batch-norm rows and the one-image rows against the
// double reference at 1e-4; at real sizes (more than 32k positions and 1M elements, channel
// counts that are and are not multiples of 4, a large mean) against the reference and against
// cuDNN's calls on the same inputs, outputs pre-filled with NaN; and the same bits from run to
// run. On the CPU self-check (DLT_GPU_TEST_DEVICE=cpu) the option has no effect.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/backend_options.h"
#include "backend/op_agreement.h"
#include "gpu/gpu_test_util.h"
#include "support/reference_ops.h"

namespace dlt::test::gpu {

namespace {

// The device under test's backend with BatchNormKernels k.
Backend& with_kernels(BatchNormKernels k) {
  return dut_backend_with([k](BackendOptions& o) { o.batch_norm_kernels = k; });
}

struct BnInputs {
  Vec x, dy, scale, offset;
};
BnInputs bn_inputs(const BatchNormDesc& d, uint64_t seed, double lo, double hi) {
  Rng rng(seed);
  BnInputs in;
  in.x = random_vec(d.n * d.h * d.w * d.c, rng, lo, hi);
  in.dy = random_vec(d.n * d.h * d.w * d.c, rng);
  in.scale = random_vec(d.c, rng, 0.5, 1.5);
  in.offset = random_vec(d.c, rng);
  return in;
}

// y, mean, var of forward_training and dx, dscale, doffset of backward, every output pre-filled
// with NaN (an element left unwritten fails every comparison). Without param_grads backward gets
// undefined dscale / doffset (a frozen batch norm) and those results stay empty.
struct BnResults {
  Vec y, mean, var, dx, dscale, doffset;
};
BnResults run_bn(Backend& be, const BatchNormDesc& d, const BnInputs& in, bool param_grads = true) {
  const Device dev = be.device();
  const Shape xs{d.n, d.h, d.w, d.c}, cs{d.c};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor tx = to_tensor(in.x, xs, dev), tdy = to_tensor(in.dy, xs, dev);
  Tensor tscale = to_tensor(in.scale, cs, dev), toffset = to_tensor(in.offset, cs, dev);
  Tensor ty(xs, dev), tdx(xs, dev), tmean(cs, dev), tvar(cs, dev), tds, tdo;
  if (param_grads) tds = Tensor(cs, dev), tdo = Tensor(cs, dev);
  for (Tensor* t : {&ty, &tdx, &tmean, &tvar, &tds, &tdo})
    if (t->defined()) be.fill(*t, nan);
  auto op = be.make(d);
  op->forward_training(tx, tscale, toffset, ty, tmean, tvar);
  op->backward(tx, tdy, tscale, tmean, tvar, tdx, tds, tdo);
  return {to_vec(ty),
          to_vec(tmean),
          to_vec(tvar),
          to_vec(tdx),
          param_grads ? to_vec(tds) : Vec{},
          param_grads ? to_vec(tdo) : Vec{}};
}

// The double reference's results for the same inputs. The fused relu's mask is the op's own
// (its y > 0): over millions of values a few pre-activations lie within rounding of 0, where the
// float op and the double reference may decide differently; the mask must agree with the op's
// own forward, which this checks.
BnResults reference_bn(const BatchNormDesc& d, const BnInputs& in, const Vec& op_y) {
  BnResults r;
  r.y = ref::bn_forward_training(d, in.x, in.scale, in.offset, &r.mean, &r.var);
  const Vec dy = d.fuse_relu ? agreement::relu_mask(in.dy, op_y) : in.dy;
  ref::bn_backward(d, in.x, dy, in.scale, r.mean, r.var, r.dx, r.dscale, r.doffset);
  return r;
}

// ||got - want||_2 / ||want||_2.
double l2_rel(const Vec& got, const Vec& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  if (got.size() != want.size() || std::isnan(num)) return INFINITY;
  return std::sqrt(num / std::max(den, 1e-300));
}

// Each output within tol (max |diff| against max |want|); the backward's outputs, when
// backward_l2 > 0, within backward_l2 normwise in L2 instead (two ops' relu masks may differ
// at a few values within rounding of 0).
void check_all(const BnResults& got, const BnResults& want, double tol, double backward_l2 = 0) {
  const std::pair<const char*, std::pair<const Vec*, const Vec*>> outputs[] = {
      {"y", {&got.y, &want.y}},    {"mean", {&got.mean, &want.mean}},       {"var", {&got.var, &want.var}},
      {"dx", {&got.dx, &want.dx}}, {"dscale", {&got.dscale, &want.dscale}}, {"doffset", {&got.doffset, &want.doffset}}};
  for (const auto& [what, pair] : outputs) {
    const bool backward = what[0] == 'd';
    if (backward && backward_l2 > 0) {
      const double rel = l2_rel(*pair.first, *pair.second);
      INFO(what << ": L2 rel " << rel);
      CHECK(rel <= backward_l2);
      continue;
    }
    const Comparison cmp = compare(*pair.first, *pair.second);
    INFO(what << ": " << cmp.str());
    CHECK(cmp.rel <= tol);
  }
}

BatchNormDesc bn(int64_t n, int64_t h, int64_t w, int64_t c, bool relu) {
  BatchNormDesc d;
  d.n = n, d.h = h, d.w = w, d.c = c, d.fuse_relu = relu;
  return d;
}

}  // namespace

TEST_CASE("gpu batch norm kernels: the agreement rows and one-image batches", "[gpu][bn]") {
  Backend& be = with_kernels(BatchNormKernels::kDltrain);
  int ran = 0;
  std::vector<AgreementRow> rows = agreement_rows();
  rows.push_back(agreement::batch_norm_row("one image 5x7", {1, 5, 7, 6, 1e-5f, false}));
  rows.push_back(agreement::batch_norm_row("one image 3x3 fused relu", {1, 3, 3, 8, 1e-5f, true}));
  rows.push_back(agreement::batch_norm_row("3 channels fused relu", {4, 6, 5, 3, 1e-5f, true}));
  for (const AgreementRow& row : rows) {
    if (row.name.rfind("batch_norm ", 0) != 0) continue;
    INFO("row: " << row.name << ", BatchNormKernels dltrain");
    row.run(be, 1e-4);
    ++ran;
  }
  CHECK(ran >= 6);
}

TEST_CASE("gpu batch norm kernels: one value per channel", "[gpu][bn]") {
  // Mean = x, variance 0, y = offset, dx = 0, dscale = 0, doffset = dy (as cuDNN's path).
  Backend& be = with_kernels(BatchNormKernels::kDltrain);
  const BatchNormDesc d = bn(1, 1, 1, 6, false);
  const BnInputs in = bn_inputs(d, 53, -2.0, 3.0);
  const BnResults r = run_bn(be, d, in);
  for (int64_t c = 0; c < d.c; ++c) {
    INFO("channel " << c);
    CHECK(std::fabs(r.y[c] - in.offset[c]) <= 1e-5);
    CHECK(std::fabs(r.mean[c] - in.x[c]) <= 1e-5);
    CHECK(std::fabs(r.var[c]) <= 1e-6);
    CHECK(std::fabs(r.dx[c]) <= 1e-5);
    CHECK(std::fabs(r.dscale[c]) <= 1e-5);
    CHECK(std::fabs(r.doffset[c] - in.dy[c]) <= 1e-6);
  }
}

TEST_CASE("gpu batch norm kernels: real sizes against the reference and cuDNN's calls", "[gpu][bn]") {
  struct Case {
    const char* name;
    BatchNormDesc d;
    double lo, hi;
    bool vs_cudnn = true;  // also against cuDNN's calls (not where its float statistics are the weak side)
  };
  const Case cases[] = {
      {"ResNet-18 layer 1: 128x32x32x64 fused relu (131,072 positions, 8.4M values)", bn(128, 32, 32, 64, true), -2.0,
       3.0},
      {"ResNet-18 layer 4: 512x4x4x512 fused relu", bn(512, 4, 4, 512, true), -2.0, 3.0},
      {"30 channels (not a multiple of 4), 64x17x17", bn(64, 17, 17, 30, false), -2.0, 3.0},
      {"3 channels, 8x45x60 fused relu", bn(8, 45, 60, 3, true), -1.0, 1.0},
      {"mean 50 against a spread of 2: 256x8x8x16", bn(256, 8, 8, 16, false), 49.0, 51.0, false},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const BnInputs in = bn_inputs(c.d, 61, c.lo, c.hi);
    BnResults own, cudnn;
    {
      Backend& be = with_kernels(BatchNormKernels::kDltrain);
      own = run_bn(be, c.d, in);
      const BnResults again = run_bn(be, c.d, in);  // deterministic: the same bits
      CHECK(std::memcmp(again.dx.data(), own.dx.data(), own.dx.size() * sizeof(own.dx[0])) == 0);
      CHECK(std::memcmp(again.dscale.data(), own.dscale.data(), own.dscale.size() * sizeof(own.dscale[0])) == 0);
      CHECK(std::memcmp(again.var.data(), own.var.data(), own.var.size() * sizeof(own.var[0])) == 0);
    }
    cudnn = run_bn(with_kernels(BatchNormKernels::kCudnn), c.d, in);
    {
      INFO("dltrain's kernels against the double reference");
      check_all(own, reference_bn(c.d, in, own.y), 1e-4);
    }
    if (c.vs_cudnn) {
      INFO("dltrain's kernels against cuDNN's calls");
      check_all(own, cudnn, 1e-4, c.d.fuse_relu ? 1e-3 : 0);
    }
  }
}

TEST_CASE("gpu batch norm kernels: backward without dscale and doffset", "[gpu][bn]") {
  // A frozen batch norm (transfer learning) passes undefined dscale / doffset: dx must not change.
  Backend& be = with_kernels(BatchNormKernels::kDltrain);
  const BatchNormDesc d = bn(32, 8, 8, 24, true);
  const BnInputs in = bn_inputs(d, 67, -2.0, 3.0);
  const BnResults full = run_bn(be, d, in), frozen = run_bn(be, d, in, /*param_grads=*/false);
  REQUIRE(frozen.dx.size() == full.dx.size());
  CHECK(std::memcmp(frozen.dx.data(), full.dx.data(), full.dx.size() * sizeof(full.dx[0])) == 0);
}

}  // namespace dlt::test::gpu
