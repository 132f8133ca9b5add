// The CPU's fused batch norm + ReLU + max pooling (BnReluMaxPoolOp, ops.h) against the separate
// ops it replaces in training (BatchNormOp with its fused ReLU, then PoolOp): the pooled
// output, the batch statistics, dscale / doffset and dx, on overlapping windows (3x3 stride 2),
// windows that leave the last row and column uncovered, channel counts that are not a multiple
// of the vector width, negative scales (the window maximum of the normalized value is then at
// the minimum of x) and inputs whose mean is far from 0 (the variance's cancellation). Scales
// of exactly 0 are left out: the pooled value is then constant over the window and either
// window position is a subgradient of the scale. Also: the Network fuses
// batchNormalization -> relu -> maxPooling2d only in that form, and a network's gradients
// through the fused step agree with finite differences.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "net/network.h"
#include "support/grad_check.h"
#include "support/tensor_utils.h"

namespace dlt::test {
namespace {

struct Case {
  int64_t n, h, w, c, k, s;
  float mean;  // of x
};

void check_case(const Case& t, uint64_t seed) {
  INFO("x " << t.n << "x" << t.h << "x" << t.w << "x" << t.c << ", " << t.k << "x" << t.k << " stride " << t.s
            << ", mean " << t.mean);
  Backend& be = cpu_backend();
  Rng rng(seed);
  BatchNormDesc bd;
  bd.n = t.n, bd.h = t.h, bd.w = t.w, bd.c = t.c, bd.epsilon = 1e-5f, bd.fuse_relu = true;
  PoolDesc pd;
  pd.n = t.n, pd.h = t.h, pd.w = t.w, pd.c = t.c, pd.kh = pd.kw = t.k, pd.stride_h = pd.stride_w = t.s;
  BnReluMaxPoolDesc fd;
  fd.bn = bd;
  fd.kh = fd.kw = t.k, fd.stride_h = fd.stride_w = t.s;
  REQUIRE(fd.out_h() == pd.out_h());
  REQUIRE(fd.out_w() == pd.out_w());

  const Shape xs{t.n, t.h, t.w, t.c}, ps{t.n, pd.out_h(), pd.out_w(), t.c}, cs{t.c};
  Tensor x = random_tensor(xs, rng, t.mean - 2.f, t.mean + 2.f);
  Tensor scale = random_tensor(cs, rng, 0.3f, 1.5f), offset = random_tensor(cs, rng, -0.5f, 0.5f);
  for (int64_t i = 0; i < t.c; i += 3) scale.data()[i] = -scale.data()[i];  // every third negative
  Tensor dpooled = random_tensor(ps, rng);

  // The separate ops, as the layers run them.
  auto bn = be.make(bd);
  auto pool = be.make(pd);
  Tensor y(xs), mean(cs), var(cs), pooled(ps), dy(xs), dx(xs), dscale(cs), doffset(cs);
  bn->forward_training(x, scale, offset, y, mean, var);
  pool->forward(y, pooled, true);
  Tensor dp = dpooled.clone();
  pool->backward(dp, dy);
  bn->backward(x, dy, scale, mean, var, dx, dscale, doffset);

  auto fused = be.make(fd);
  REQUIRE(fused);
  Tensor f_mean(cs), f_var(cs), f_pooled(ps), f_dx(xs), f_dscale(cs), f_doffset(cs);
  std::fill(f_pooled.data(), f_pooled.data() + f_pooled.numel(), std::nanf(""));
  std::fill(f_dx.data(), f_dx.data() + f_dx.numel(), std::nanf(""));
  fused->forward_training(x, scale, offset, f_pooled, f_mean, f_var);
  fused->backward(x, f_pooled, dpooled, scale, f_dx, f_dscale, f_doffset);

  auto close = [](const char* what, const Tensor& got, const Tensor& want, double tol) {
    const Comparison c = compare(got, to_vec(want));
    INFO(what << ": " << c.str());
    CHECK(c.rel <= tol);
  };
  close("pooled", f_pooled, pooled, 1e-5);
  close("mean", f_mean, mean, 1e-5);  // oneDNN sums in float, this op in double
  close("var", f_var, var, 1e-5);
  close("doffset", f_doffset, doffset, 1e-5);
  close("dscale", f_dscale, dscale, 1e-4);
  close("dx", f_dx, dx, 1e-4);

  // Without dx (an undefined tensor): the same parameter gradients.
  Tensor none, g_scale(cs), g_offset(cs);
  fused->backward(x, f_pooled, dpooled, scale, none, g_scale, g_offset);
  CHECK(to_vec(g_scale) == to_vec(f_dscale));
  CHECK(to_vec(g_offset) == to_vec(f_doffset));
}

}  // namespace

TEST_CASE("cpu bn + relu + max pooling in one op: as the separate ops", "[backend][cpu][fusion]") {
  check_case({5, 9, 9, 13, 3, 2, 0.f}, 1);     // CIFAR's pool1 form: overlapping windows
  check_case({4, 7, 6, 8, 2, 2, 0.f}, 2);      // row 6 uncovered
  check_case({3, 8, 8, 32, 3, 3, 0.f}, 3);     // windows side by side, 2 columns uncovered
  check_case({6, 10, 10, 17, 3, 2, 40.f}, 4);  // a mean far from 0
  check_case({2, 5, 5, 3, 5, 1, 0.f}, 5);      // one window position per row, 3 channels
}

TEST_CASE("network: batch norm, its relu and a max pooling fuse in CPU training only in that form", "[net][fusion]") {
  auto spec = [](const std::vector<std::string>& pool_opts) {
    NetworkSpec s;
    s.layers = {layer_spec("imageInput", {"InputSize=[8,8,3]", "Normalization=none"}, "in"),
                layer_spec("convolution2d", {"FilterSize=3", "NumFilters=4", "Padding=same"}, "conv"),
                layer_spec("batchNormalization", {}, "bn"),
                layer_spec("relu", {}, "relu"),
                layer_spec("maxPooling2d", pool_opts, "pool"),
                layer_spec("fullyConnected", {"OutputSize=2"}, "fc"),
                layer_spec("softmax", {}, "sm"),
                layer_spec("classification", {}, "out")};
    return s;
  };
  CHECK(Network(spec({"PoolSize=3", "Stride=2"}), Device::cpu()).fused_with_max_pool(2));
  // Finite differences through the fused step: overlapping 3x3 windows, stride 2, over 8x8
  // (row and column 7 in no window).
  GradCheckOptions o;
  o.batch = 3;
  o.samples = 12;
  o.step = 1e-3;
  auto r = check_network(spec({"PoolSize=3", "Stride=2"}), o);
  INFO("worst " << r.worst << " error " << r.max_error << " kinks " << r.skipped_kinks);
  CHECK(r.checked > 30);
  CHECK(r.failed == 0);
  CHECK_FALSE(Network(spec({"PoolSize=3", "Stride=2", "Padding=1"}), Device::cpu()).fused_with_max_pool(2));
  CHECK_FALSE(
      Network(spec({"PoolSize=2", "Stride=2", "HasUnpoolingOutputs=true"}), Device::cpu()).fused_with_max_pool(2));
}

}  // namespace dlt::test
