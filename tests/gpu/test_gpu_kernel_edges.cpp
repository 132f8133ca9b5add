// (b) Edge cases of the CUDA backend's own kernels against the CPU backend: the cross-entropy
// arg-max with ties and NaNs in rows of more than 32 classes (one warp per row), sums of more
// inputs than one kernel takes, empty tensors (no launch of 0 blocks), and the update kernels
// that read their scalars from device memory (bit-identical to the by-value ones).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "gpu/gpu_test_util.h"
#include "support/updates.h"

namespace dlt::test::gpu {

namespace {

// Elements that differ (NaN equals NaN).
int64_t count_differ(const Tensor& got, const Tensor& want) {
  const Vec g = to_vec(got), w = to_vec(want);
  REQUIRE(g.size() == w.size());
  int64_t differ = 0;
  for (size_t i = 0; i < g.size(); ++i) differ += g[i] != w[i] && !(std::isnan(g[i]) && std::isnan(w[i]));
  return differ;
}

}  // namespace

TEST_CASE("gpu loss: cross_entropy arg-max with ties and NaNs as the CPU's scan", "[gpu][loss]") {
  constexpr int64_t c = 70;  // lanes 0..5 of the row's warp hold three values, the rest two
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Rng rng(111);
  struct Row {
    std::vector<std::pair<int64_t, double>> set;  // (class, value) over small random values
    int32_t label;
    bool correct;  // by the CPU's rule: the first maximum, a NaN counts only at class 0
  };
  const std::vector<Row> rows = {
      {{{1, nan}, {33, 0.9}}, 33, true},  // a NaN first in lane 1 hides nothing
      {{{1, nan}, {33, 0.9}}, 0, false},
      {{{0, nan}, {40, 0.9}}, 40, false},           // a NaN at class 0 wins
      {{{5, 0.8}, {37, 0.8}, {40, 0.8}}, 5, true},  // ties: the first (same lane, then others)
      {{{5, 0.8}, {37, 0.8}, {40, 0.8}}, 37, false},
      {{{45, 0.7}, {64, 0.7}, {3, 0.5}}, 45, true},   // ties in lanes 13 and 0: class 45 first
      {{{69, 0.95}, {2, nan}, {34, 0.9}}, 69, true},  // the last class, lane 5's third value
      {{{10, 0.6}}, 10, true},
  };
  const int64_t n = static_cast<int64_t>(rows.size());
  Vec probs = random_vec(n * c, rng, 0.001, 0.01);
  Tensor lc(Shape{n}, Device::cpu(), DType::kI32);
  int64_t want_correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (auto [j, v] : rows[static_cast<size_t>(i)].set) probs[static_cast<size_t>(i * c + j)] = v;
    lc.data_i32()[i] = rows[static_cast<size_t>(i)].label;
    want_correct += rows[static_cast<size_t>(i)].correct;
  }
  Tensor pc = to_tensor(probs, {n, c}), pd = pc.to(device_under_test());
  Tensor ld = lc.to(device_under_test());
  Tensor dc(pc.shape()), dd(pc.shape(), device_under_test());
  int64_t cc = -1, cd = -2;
  const double want = cpu_be().cross_entropy(pc, lc, dc, &cc);
  const double got = dut_backend().cross_entropy(pd, ld, dd, &cd);
  CHECK(cc == want_correct);  // the table above describes the CPU
  CHECK(cd == cc);
  CHECK(std::isfinite(want));  // no label points at a NaN
  CHECK(got == Approx(want).epsilon(1e-6));
  CHECK(count_differ(dd, dc) == 0);  // dlogits bit for bit, NaNs where the NaNs are
}

TEST_CASE("gpu elementwise: sum of more inputs than one kernel adds, into its first input", "[gpu][elementwise]") {
  Rng rng(112);
  const Shape s{4099};
  std::vector<TensorPair> xs;
  for (int j = 0; j < 19; ++j) xs.push_back(random_pair(s, rng, -100.f, 100.f));
  std::vector<const Tensor*> in_c, in_d;
  for (auto& x : xs) {
    in_c.push_back(&x.cpu);
    in_d.push_back(&x.dev);
  }
  Tensor yc(s), yd(s, device_under_test());
  cpu_be().sum(in_c, yc);
  dut_backend().sum(in_d, yd);
  CHECK(count_differ(yd, yc) == 0);  // added in the same order: bit for bit
  // The output may be the first input (the chunks after the first add into it).
  cpu_be().sum(in_c, xs[0].cpu);
  dut_backend().sum(in_d, xs[0].dev);
  CHECK(count_differ(xs[0].dev, yc) == 0);
  CHECK(count_differ(xs[0].cpu, yc) == 0);
}

TEST_CASE("gpu elementwise: empty tensors launch nothing and fail nothing", "[gpu][elementwise]") {
  Backend& be = dut_backend();
  const Device d = device_under_test();
  Tensor a(Shape{0}, d), b(Shape{0}, d), c(Shape{0}, d), m(Shape{0}, d);
  be.fill(a, 1.f);
  be.copy(a, b);
  be.axpby(2.f, a, 0.5f, b);
  be.sum({&a, &b}, c);
  be.scale(a, 3.f);
  be.clamp(a, 0.f, 1.f);
  be.multiply(a, b, c);
  be.dropout_forward(a, b, m, 0.5f, 7, 0);
  CHECK(be.sum_squares(a) == 0.0);
  Tensor norms = Tensor::zeros(Shape{2}).to(d);
  be.fill(norms, 5.f);
  be.l2_norm_into(a, norms, 0, false);
  be.l2_norm_into(a, norms, 1, true);
  be.clip_to_norm(a, norms, 1, 1.0);
  CHECK(to_vec(norms) == Vec{0.0, 5.0});
  sgdm_update(be, a, b, c, 0.1f, 0.9f, 0.f);
  adam_update(be, a, b, c, m, 0.1f, 0.9f, 0.999f, 1e-8f, 1, 0.f);
  adamw_update(be, a, b, c, m, 0.1f, 0.9f, 0.999f, 1e-8f, 1, 0.f, 0.01f);
  rmsprop_update(be, a, b, c, 0.1f, 0.9f, 1e-8f, 0.f);
  Tensor x(Shape{0, 3, 3, 4}, d), ones(Shape{4}, d);
  be.fill(ones, 1.f);
  be.batch_norm_dx_correction(x, ones, ones, ones, 1e-5f, 8.0, ones, ones, x);
  be.synchronize();
  CHECK(a.numel() == 0);
}

TEST_CASE("gpu optimizers: scalars read from device memory give the by-value updates bit for bit", "[gpu][optim]") {
  Rng rng(113);
  const Shape s{50021};
  const float lr = 3e-3f, b1 = 0.9f, b2 = 0.99f;
  const int64_t t = 4;
  Tensor scalars = to_tensor(Vec{lr, adam_correction(b1, t), adam_correction(b2, t)}, {3}, device_under_test());
  StepScalars k;
  k.lr = StepScalar::at(scalars, 0);
  k.c1 = StepScalar::at(scalars, 1);
  k.c2 = StepScalar::at(scalars, 2);
  Tensor none;
  Backend& be = dut_backend();
  auto g = random_pair(s, rng);
  for (const char* opt : {"sgdm", "adam", "rmsprop", "adamw"}) {
    auto w = random_pair(s, rng), st1 = random_pair(s, rng, 0.f, 0.1f);
    Tensor st2 = st1.dev.clone(), w2 = w.dev.clone();
    Tensor m1 = Tensor::zeros(s).to(device_under_test()), m2 = m1.clone();
    const std::string name = opt;
    for (int step = 0; step < 2; ++step) {
      if (name == "sgdm") {
        sgdm_update(be, w.dev, g.dev, st1.dev, lr, 0.9f, 1e-4f);
        be.optimizer_update(UpdateRule{Solver::kSgdm, 0.9f, b1, b2, 1e-8f, 1e-4f, 0.f}, k, w2, g.dev, st2, none);
      } else if (name == "adam") {
        adam_update(be, w.dev, g.dev, m1, st1.dev, lr, b1, b2, 1e-8f, t, 1e-4f);
        be.optimizer_update(UpdateRule{Solver::kAdam, 0.9f, b1, b2, 1e-8f, 1e-4f, 0.f}, k, w2, g.dev, m2, st2);
      } else if (name == "adamw") {
        adamw_update(be, w.dev, g.dev, m1, st1.dev, lr, b1, b2, 1e-8f, t, 1e-4f, 0.05f);
        be.optimizer_update(UpdateRule{Solver::kAdamW, 0.9f, b1, b2, 1e-8f, 1e-4f, 0.05f}, k, w2, g.dev, m2, st2);
      } else {
        rmsprop_update(be, w.dev, g.dev, st1.dev, lr, b2, 1e-8f, 1e-4f);
        be.optimizer_update(UpdateRule{Solver::kRmsprop, 0.9f, b1, b2, 1e-8f, 1e-4f, 0.f}, k, w2, g.dev, none, st2);
      }
    }
    INFO(name);
    CHECK(count_differ(w2, w.dev) == 0);
    CHECK(count_differ(st2, st1.dev) == 0);
    CHECK(count_differ(m2, m1) == 0);
    CHECK(count_differ(w.dev, w.cpu) > s.numel() / 2);  // the updates did move the weights
  }
}

}  // namespace dlt::test::gpu
