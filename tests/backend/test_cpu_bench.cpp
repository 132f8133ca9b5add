// Hidden benchmark (run with: dltrain_tests "[.bench]" -s): oneDNN implementations chosen and
// per-op times for the CIFAR-10 example network at N = 100 on the CPU backend.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "backend/cpu/cpu_backend.h"
#include "support/tensor_utils.h"
#include "util/timer.h"

namespace dlt::test {
namespace {

// The best of several rounds: the CI and dev machines are shared, the minimum is stable.
double time_ms(const std::function<void()>& f, int rounds = 8, int reps = 3) {
  f();  // warm up
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    Timer t;
    for (int i = 0; i < reps; ++i) f();
    best = std::min(best, t.seconds() * 1e3 / reps);
  }
  return best;
}

ConvDesc cifar_conv(int64_t hw, int64_t c, int64_t k) {
  ConvDesc d;
  d.n = 100, d.h = d.w = hw, d.c = c, d.k = k, d.kh = d.kw = 5;
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 2, d.fuse_relu = true;
  return d;
}

}  // namespace

TEST_CASE("cpu backend: CIFAR-10 net op timings", "[.bench]") {
  Backend& be = cpu_backend();
  Rng rng(1);
  std::printf("%s\n", be.name().c_str());
  double total = 0;
  for (ConvDesc d : {cifar_conv(32, 3, 32), cifar_conv(15, 32, 32), cifar_conv(7, 32, 64)}) {
    auto op = be.make(d);
    Tensor x = random_tensor({d.n, d.h, d.w, d.c}, rng), w = random_tensor({d.k, d.kh, d.kw, d.c}, rng);
    Tensor b = random_tensor({d.k}, rng), y({d.n, d.out_h(), d.out_w(), d.k});
    Tensor dx(x.shape()), dw(w.shape()), db(b.shape()), dy = random_tensor(y.shape(), rng);
    double f = time_ms([&] { op->forward(x, w, b, y); });
    double bd = time_ms([&] { op->backward_data(dy, w, dx); });
    double bw = time_ms([&] { op->backward_weights(x, dy, dw, db); });
    total += f + (d.c == 3 ? 0 : bd) + bw;
    std::printf("conv %ldx%ldx%ld->%ld: fwd %.2f ms, bwd_data %.2f ms, bwd_weights %.2f ms\n  %s\n", d.h, d.w, d.c, d.k,
                f, bd, bw, impl_info(*op).c_str());
  }
  struct P {
    int64_t hw, c;
  };
  for (P p : {P{32, 32}, P{15, 32}, P{7, 64}}) {
    PoolDesc d;
    d.n = 100, d.h = d.w = p.hw, d.c = p.c, d.kh = d.kw = 3, d.stride_h = d.stride_w = 2;
    auto op = be.make(d);
    Tensor x = random_tensor({d.n, d.h, d.w, d.c}, rng), y({d.n, d.out_h(), d.out_w(), d.c});
    Tensor dx(x.shape()), dy = random_tensor(y.shape(), rng);
    double f = time_ms([&] { op->forward(x, y, true); });
    double bk = time_ms([&] { op->backward(dy, dx); });
    total += f + bk;
    std::printf("maxpool %ldx%ldx%ld: fwd %.3f ms, bwd %.3f ms  %s\n", d.h, d.w, d.c, f, bk, impl_info(*op).c_str());
  }
  for (FcDesc d : {FcDesc{100, 576, 64, true}, FcDesc{100, 64, 10, false}}) {
    auto op = be.make(d);
    Tensor x = random_tensor({d.n, d.in}, rng), w = random_tensor({d.out, d.in}, rng);
    Tensor b = random_tensor({d.out}, rng), y({d.n, d.out}), dy = random_tensor(y.shape(), rng);
    Tensor dx(x.shape()), dw(w.shape()), db(b.shape());
    double f = time_ms([&] { op->forward(x, w, b, y); });
    double bd = time_ms([&] { op->backward_data(dy, w, dx); });
    double bw = time_ms([&] { op->backward_weights(x, dy, dw, db); });
    total += f + bd + bw;
    std::printf("fc %ld->%ld: fwd %.3f ms, bwd_data %.3f ms, bwd_weights %.3f ms  %s\n", d.in, d.out, f, bd, bw,
                impl_info(*op).c_str());
  }
  {
    auto op = be.make(SoftmaxDesc{100, 10});
    Tensor x = random_tensor({100, 1, 1, 10}, rng), y(x.shape()), dx(x.shape());
    double f = time_ms([&] { op->forward(x, y); });
    std::printf("softmax 100x10: fwd %.4f ms  %s\n", f, impl_info(*op).c_str());
  }
  {
    BatchNormDesc d{100, 32, 32, 32, 1e-5f, true};
    auto op = be.make(d);
    Tensor x = random_tensor({d.n, d.h, d.w, d.c}, rng), y(x.shape()), dx(x.shape());
    Tensor s = random_tensor({d.c}, rng), o(s.shape()), m(s.shape()), v(s.shape());
    Tensor ds(s.shape()), dof(s.shape());
    double f = time_ms([&] { op->forward_training(x, s, o, y, m, v); });
    double bk = time_ms([&] { op->backward(x, y, s, m, v, dx, ds, dof); });
    std::printf("batch_norm 32x32x32 (not in the net): fwd %.3f ms, bwd %.3f ms  %s\n", f, bk, impl_info(*op).c_str());
  }
  {
    LrnDesc d{100, 15, 15, 32, 5, 1e-4f, 0.75f, 2.f};
    auto op = be.make(d);
    Tensor x = random_tensor({d.n, d.h, d.w, d.c}, rng), y(x.shape()), dx(x.shape());
    double f = time_ms([&] { op->forward(x, y, true); });
    double bk = time_ms([&] { op->backward(x, y, dx); });
    std::printf("lrn 15x15x32 (not in the net): fwd %.3f ms, bwd %.3f ms  %s\n", f, bk, impl_info(*op).c_str());
  }
  std::printf("CIFAR-10 net conv+pool+fc per training step (N=100): %.2f ms\n", total);
  CHECK(total > 0);
}

}  // namespace dlt::test

namespace dlt::test {

TEST_CASE("cpu backend: batch norm + relu + max pooling, fused and separate", "[.bench]") {
  // cifar10-bn's bn1 -> relu1 -> pool1 at N = 100: 100x32x32x32, 3x3 stride 2.
  Backend& be = cpu_backend();
  Rng rng(3);
  BatchNormDesc bd;
  bd.n = 100, bd.h = bd.w = 32, bd.c = 32, bd.fuse_relu = true;
  PoolDesc pd;
  pd.n = 100, pd.h = pd.w = 32, pd.c = 32, pd.kh = pd.kw = 3, pd.stride_h = pd.stride_w = 2;
  BnReluMaxPoolDesc fd;
  fd.bn = bd;
  fd.kh = fd.kw = 3, fd.stride_h = fd.stride_w = 2;
  const Shape xs{100, 32, 32, 32}, ps{100, pd.out_h(), pd.out_w(), 32}, cs{32};
  Tensor x = random_tensor(xs, rng), scale = random_tensor(cs, rng, 0.5f, 1.5f), offset = random_tensor(cs, rng);
  Tensor y(xs), mean(cs), var(cs), pooled(ps), dp = random_tensor(ps, rng), dy(xs), dx(xs), ds(cs), dof(cs);
  auto bn = be.make(bd);
  auto pool = be.make(pd);
  auto fused = be.make(fd);
  REQUIRE(fused);
  const double sf = time_ms([&] {
    bn->forward_training(x, scale, offset, y, mean, var);
    pool->forward(y, pooled, true);
  });
  const double sb = time_ms([&] {
    pool->backward(dp, dy);
    bn->backward(x, dy, scale, mean, var, dx, ds, dof);
  });
  const double ff = time_ms([&] { fused->forward_training(x, scale, offset, pooled, mean, var); });
  const double fb = time_ms([&] { fused->backward(x, pooled, dp, scale, dx, ds, dof); });
  std::printf("bn1+relu1+pool1, 100x32x32x32, 3x3/2: separate forward %.3f ms backward %.3f ms; fused %.3f / %.3f ms\n",
              sf, sb, ff, fb);
}

}  // namespace dlt::test
