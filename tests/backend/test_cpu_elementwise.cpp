// CPU backend element-wise ops, cross-entropy, optimizer updates (closed-form values) and the
// dropout mask (reproducible, independent of thread count, fraction ~ p).
#include <catch2/catch.hpp>

#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "support/tensor_utils.h"
#include "support/updates.h"

namespace dlt::test {

TEST_CASE("fill, copy, axpby, sum, scale, clamp, mul", "[backend][cpu]") {
  Backend& be = cpu_backend();
  const int64_t n = 50000;  // above the parallel threshold
  Rng rng(5);
  Vec xv = random_vec(n, rng), yv = random_vec(n, rng);
  Tensor x = to_tensor(xv, {n}), y = to_tensor(yv, {n});

  be.axpby(2.f, x, -0.5f, y);
  Vec want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = 2 * xv[i] - 0.5 * yv[i];
  CHECK(compare(y, want).rel < 1e-6);

  be.fill(y, std::nanf(""));
  be.axpby(3.f, x, 0.f, y);  // b = 0 must not read the NaNs
  for (int64_t i = 0; i < n; ++i) want[i] = 3 * xv[i];
  CHECK(compare(y, want).rel < 1e-6);

  Tensor z(Shape{n});
  be.fill(z, 1.5f);
  CHECK(to_vec(z) == Vec(n, 1.5));
  be.copy(x, z);
  CHECK(to_vec(z) == xv);

  Tensor s(Shape{n});
  be.sum({&x, &y, &z}, s);
  for (int64_t i = 0; i < n; ++i) want[i] = xv[i] + 3 * xv[i] + xv[i];
  CHECK(compare(s, want).rel < 1e-6);

  be.scale(s, 0.2f);
  for (auto& v : want) v *= 0.2;
  CHECK(compare(s, want).rel < 1e-6);

  be.clamp(s, -0.25f, 0.5f);
  for (auto& v : want) v = std::min(std::max(v, -0.25), 0.5);
  CHECK(compare(s, want).rel < 1e-6);

  be.multiply(x, y, z);
  for (int64_t i = 0; i < n; ++i) want[i] = xv[i] * 3 * xv[i];
  CHECK(compare(z, want).rel < 1e-6);
}

TEST_CASE("sum_squares and shift_scale", "[backend][cpu]") {
  Backend& be = cpu_backend();
  Tensor t = to_tensor({1, -2, 3, 0.5}, {4});
  CHECK(be.sum_squares(t) == Approx(14.25));
  const int64_t n = 100000;
  Tensor big(Shape{n});
  be.fill(big, 0.5f);
  CHECK(be.sum_squares(big) == Approx(0.25 * n).epsilon(1e-12));

  CHECK_THROWS_WITH(be.shift_scale(t, to_tensor({1}, {1}), Tensor(Shape{0}), t),
                    Catch::Contains("0 multipliers"));  // an empty multiplier, not a crash

  // clipping by norm into device-side slots: set, accumulate, clip, leave, refuse a bad slot
  Tensor norms(Shape{2});
  be.l2_norm_into(t, norms, 0, false);  // sqrt(14.25)
  be.l2_norm_into(t, norms, 1, false);
  be.l2_norm_into(to_tensor({2, 0}, {2}), norms, 1, true);  // sqrt(14.25 + 4)
  CHECK(to_vec(norms) == Vec{static_cast<float>(std::sqrt(14.25)), static_cast<float>(std::sqrt(18.25))});
  Tensor huge = to_tensor({3e30f, 4e30f}, {2});  // norm 5e30: its square is above FLT_MAX
  be.l2_norm_into(huge, norms, 1, false);
  be.l2_norm_into(huge, norms, 1, true);
  CHECK(norms.data()[1] == Approx(5e30 * std::sqrt(2.0)).epsilon(1e-6));
  Tensor u = to_tensor({3, 4}, {2});
  be.l2_norm_into(u, norms, 0, false);  // norm 5
  be.clip_to_norm(u, norms, 0, 2.5);
  CHECK(to_vec(u) == Vec{1.5f, 2.f});
  be.clip_to_norm(u, norms, 0, 5.0);  // the slot still says 5: not above 5, unchanged
  CHECK(to_vec(u) == Vec{1.5f, 2.f});
  norms.data()[1] = std::nanf("");
  be.clip_to_norm(u, norms, 1, 1.0);
  CHECK(to_vec(u) == Vec{1.5f, 2.f});
  CHECK_THROWS_WITH(be.l2_norm_into(u, norms, 2, false), Catch::Contains("slot 2 of 2"));
  CHECK_THROWS_WITH(be.clip_to_norm(u, norms, -1, 1.0), Catch::Contains("slot -1 of 2"));

  // per-channel (C = 3) shift and multiplier over 2 pixels
  Tensor x = to_tensor({10, 20, 30, 11, 21, 31}, {1, 1, 2, 3});
  Tensor y(x.shape());
  be.shift_scale(x, to_tensor({10, 20, 30}, {3}), to_tensor({1, 2, 0.5}, {3}), y);
  CHECK(to_vec(y) == Vec{0, 0, 0, 1, 2, 0.5});
  // a mean image (H*W*C = 6) repeated over N = 2, no multiplier
  Tensor x2 = to_tensor({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 1, 2, 3});
  Tensor y2(x2.shape());
  be.shift_scale(x2, to_tensor({1, 1, 1, 2, 2, 2}, {1, 2, 3}), Tensor(), y2);
  CHECK(to_vec(y2) == Vec{0, 1, 2, 2, 3, 4, 6, 7, 8, 8, 9, 10});

  // Sizes that run on every thread, with thread ranges that do not start on a channel or
  // image boundary: each element against the definition.
  Rng rng(5);
  const Shape large{7, 29, 31, 3};
  Tensor xb = random_tensor(large, rng), yb(large), yi(large);
  Tensor ch_shift = random_tensor(Shape{3}, rng), ch_mul = random_tensor(Shape{3}, rng);
  Tensor image = random_tensor(Shape{29, 31, 3}, rng);
  be.shift_scale(xb, ch_shift, ch_mul, yb);
  be.shift_scale(xb, image, Tensor(), yi);
  int64_t wrong = 0;
  for (int64_t i = 0; i < xb.numel(); ++i) {
    const float v = xb.data()[i];
    wrong += yb.data()[i] != (v - ch_shift.data()[i % 3]) * ch_mul.data()[i % 3];
    wrong += yi.data()[i] != v - image.data()[i % image.numel()];
  }
  CHECK(xb.numel() > (1 << 14));
  CHECK(wrong == 0);
}

TEST_CASE("cross_entropy by hand", "[backend][cpu]") {
  Backend& be = cpu_backend();
  Tensor probs = to_tensor({0.7, 0.2, 0.1, 0.1, 0.3, 0.6}, {2, 1, 1, 3});
  Tensor labels(Shape{2}, Device::cpu(), DType::kI32);
  labels.data_i32()[0] = 0;
  labels.data_i32()[1] = 1;
  Tensor d(probs.shape());
  int64_t correct = -1;
  double loss = be.cross_entropy(probs, labels, d, &correct);
  CHECK(loss == Approx((-std::log(0.7) - std::log(0.3)) / 2).epsilon(1e-6));
  CHECK(correct == 1);
  CHECK(all_close(to_vec(d), {-0.15, 0.1, 0.05, 0.05, -0.35, 0.3}, 1e-6, 1e-7));
  Tensor none;
  labels.data_i32()[1] = 2;
  CHECK(be.cross_entropy(probs, labels, none, nullptr) == Approx((-std::log(0.7) - std::log(0.6)) / 2).epsilon(1e-6));
  // probability 0 for the true class gives a large finite loss
  Tensor zero = to_tensor({1, 0}, {1, 2});
  Tensor one_label(Shape{1}, Device::cpu(), DType::kI32);
  one_label.data_i32()[0] = 1;
  double l0 = be.cross_entropy(zero, one_label, none, nullptr);
  CHECK(std::isfinite(l0));
  CHECK(l0 == Approx(-std::log(1e-37)).epsilon(1e-6));
  one_label.data_i32()[0] = 2;
  CHECK_THROWS_AS(be.cross_entropy(zero, one_label, none, nullptr), DataError);
}

TEST_CASE("cross_entropy with class weights and undefined labels, by hand", "[backend][cpu]") {
  Backend& be = cpu_backend();
  Tensor probs = to_tensor({0.7, 0.2, 0.1, 0.1, 0.3, 0.6, 0.2, 0.5, 0.3}, {3, 1, 1, 3});
  Tensor labels(Shape{3}, Device::cpu(), DType::kI32);
  labels.data_i32()[0] = 0;
  labels.data_i32()[1] = -1;  // undefined
  labels.data_i32()[2] = 1;
  LossOptions opt;
  opt.undefined_labels = true;
  opt.class_weights = to_tensor({2, 0.5, 1}, {3});
  Tensor d(probs.shape());
  int64_t correct = -1, counted = -1;
  // W = 2 + 0.5; loss = (2 * -log 0.7 + 0.5 * -log 0.5) / W; dlogits = w (p - onehot) / W
  const double loss = be.cross_entropy(probs, labels, d, &correct, opt, &counted);
  CHECK(loss == Approx((-2 * std::log(0.7) - 0.5 * std::log(0.5)) / 2.5).epsilon(1e-6));
  CHECK(correct == 2);
  CHECK(counted == 2);
  CHECK(
      all_close(to_vec(d), {0.8 * -0.3, 0.8 * 0.2, 0.8 * 0.1, 0, 0, 0, 0.2 * 0.2, 0.2 * -0.5, 0.2 * 0.3}, 1e-6, 1e-7));
  // Without undefined_labels a -1 is a bad label; with it, every label undefined is loss 0.
  Tensor none;
  opt.undefined_labels = false;
  CHECK_THROWS_WITH(be.cross_entropy(probs, labels, none, nullptr, opt),
                    Catch::Contains("label -1 of sample 1 is outside 0..2"));
  opt.undefined_labels = true;
  for (int i = 0; i < 3; ++i) labels.data_i32()[i] = -1;
  CHECK(be.cross_entropy(probs, labels, d, &correct, opt, &counted) == 0.0);
  CHECK(counted == 0);
  CHECK(to_vec(d) == Vec(9, 0.0));
  // A label beyond the classes is an error also when undefined labels are allowed.
  labels.data_i32()[2] = 3;
  CHECK_THROWS_AS(be.cross_entropy(probs, labels, none, nullptr, opt), DataError);
}

TEST_CASE("max pooling indices and max unpooling by hand, with ties", "[backend][cpu]") {
  Backend& be = cpu_backend();
  // One 4x4 plane, 2x2 windows, stride 2. The top-left window has a tie (5 at (0,0) and (1,1)):
  // the first in row order wins.
  Tensor x = to_tensor({5, 1, 2, 3, 0, 5, 4, 1, 7, 1, 0, 0, 1, 1, 0, 9}, {1, 4, 4, 1});
  PoolDesc d;
  d.n = 1, d.h = 4, d.w = 4, d.c = 1, d.kh = 2, d.kw = 2, d.stride_h = 2, d.stride_w = 2;
  Tensor idx(Shape{1, 2, 2, 1}, Device::cpu(), DType::kI32);
  be.max_pool_indices(x, idx, d);
  CHECK(std::vector<int32_t>(idx.data_i32(), idx.data_i32() + 4) == std::vector<int32_t>{0, 6, 8, 15});
  Tensor y(Shape{1, 4, 4, 1});
  be.max_unpool(to_tensor({10, 20, 30, 40}, {1, 2, 2, 1}), idx, y, d);
  CHECK(to_vec(y) == Vec{10, 0, 0, 0, 0, 0, 20, 0, 30, 0, 0, 0, 0, 0, 0, 40});
  Tensor dx(Shape{1, 2, 2, 1});
  be.max_unpool_backward(x, idx, dx, d);  // gathers x at the indices: the window maxima
  CHECK(to_vec(dx) == Vec{5, 4, 7, 9});
  // Overlapping windows (3x3, stride 1) on a 1x3 plane with channels 2: both windows' maxima
  // at the same position add up when unpooled.
  PoolDesc o;
  o.n = 1, o.h = 1, o.w = 3, o.c = 2, o.kh = 1, o.kw = 2, o.stride_h = 1, o.stride_w = 1;
  Tensor x2 = to_tensor({1, 6, 9, 2, 3, 4}, {1, 1, 3, 2});
  Tensor idx2(Shape{1, 1, 2, 2}, Device::cpu(), DType::kI32);
  be.max_pool_indices(x2, idx2, o);
  CHECK(std::vector<int32_t>(idx2.data_i32(), idx2.data_i32() + 4) == std::vector<int32_t>{1, 0, 1, 2});
  Tensor y2(Shape{1, 1, 3, 2});
  be.max_unpool(to_tensor({1, 2, 3, 4}, {1, 1, 2, 2}), idx2, y2, o);
  CHECK(to_vec(y2) == Vec{0, 2, 4, 0, 0, 4});
  // Sizes that do not fit the pooling are refused.
  Tensor wrong(Shape{1, 3, 3, 1});
  CHECK_THROWS(be.max_unpool(to_tensor({10, 20, 30, 40}, {1, 2, 2, 1}), idx, wrong, d));
}

TEST_CASE("crop2d and its backward by hand", "[backend][cpu]") {
  Backend& be = cpu_backend();
  // One 3x4 plane of 2 channels (channel 1 = -channel 0); the 2x2 window at row 1, column 2.
  Vec v;
  for (int i = 1; i <= 12; ++i) v.insert(v.end(), {double(i), double(-i)});
  Tensor x = to_tensor(v, {1, 3, 4, 2});
  CropDesc d;
  d.n = 1, d.h = 3, d.w = 4, d.c = 2, d.out_h = 2, d.out_w = 2, d.top = 1, d.left = 2;
  Tensor y(Shape{1, 2, 2, 2});
  be.crop2d(x, y, d);
  CHECK(to_vec(y) == Vec{7, -7, 8, -8, 11, -11, 12, -12});
  Tensor dx(Shape{1, 3, 4, 2});
  be.fill(dx, 9.f);
  be.crop2d_backward(to_tensor({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2}), dx, d);
  CHECK(to_vec(dx) == Vec{0, 0, 0, 0, 0, 0, 0, 0,  //
                          0, 0, 0, 0, 1, 2, 3, 4,  //
                          0, 0, 0, 0, 5, 6, 7, 8});
  // A window that does not fit is refused.
  d.left = 3;
  CHECK_THROWS_WITH(be.crop2d(x, y, d), Catch::Contains("is not inside 3x4"));
}

TEST_CASE("sgdm, adam, rmsprop and adamw updates match closed-form values", "[backend][cpu]") {
  Backend& be = cpu_backend();
  SECTION("sgdm") {
    Tensor w = to_tensor({1, -2}, {2}), g = to_tensor({0.5, 1}, {2}), v = to_tensor({0.2, 0}, {2});
    sgdm_update(be, w, g, v, 0.1f, 0.9f, 0.01f);
    // v = 0.9*0.2 - 0.1*(0.5 + 0.01*1) = 0.129; w = 1.129
    // v = 0 - 0.1*(1 + 0.01*-2) = -0.098;      w = -2.098
    CHECK(all_close(to_vec(v), {0.129, -0.098}, 1e-6, 1e-7));
    CHECK(all_close(to_vec(w), {1.129, -2.098}, 1e-6, 1e-7));
  }
  SECTION("adam, two steps") {
    Tensor w = to_tensor({1}, {1}), g = to_tensor({0.5}, {1});
    Tensor m = to_tensor({0}, {1}), s = to_tensor({0}, {1});
    // step 1: m = 0.05, s = 0.00025; mhat = 0.5, shat = 0.25 -> w -= 0.1 * 0.5 / 0.5
    adam_update(be, w, g, m, s, 0.1f, 0.9f, 0.999f, 1e-8f, 1, 0.f);
    CHECK(to_vec(w)[0] == Approx(0.9).epsilon(1e-6));
    CHECK(to_vec(m)[0] == Approx(0.05).epsilon(1e-6));
    CHECK(to_vec(s)[0] == Approx(0.00025).epsilon(1e-4));  // 1 - 0.999 rounds in float
    // step 2: m = 0.095, mhat = 0.095/0.19 = 0.5; s = 0.00049975, shat = 0.25 -> w = 0.8
    adam_update(be, w, g, m, s, 0.1f, 0.9f, 0.999f, 1e-8f, 2, 0.f);
    CHECK(to_vec(w)[0] == Approx(0.8).epsilon(1e-5));
    // with L2: g' = 0.5 + 0.1 * 1 = 0.6, first step still moves by lr
    Tensor w2 = to_tensor({1}, {1}), m2 = to_tensor({0}, {1}), s2 = to_tensor({0}, {1});
    adam_update(be, w2, g, m2, s2, 0.1f, 0.9f, 0.999f, 1e-8f, 1, 0.1f);
    CHECK(to_vec(m2)[0] == Approx(0.06).epsilon(1e-6));
    CHECK(to_vec(w2)[0] == Approx(0.9).epsilon(1e-6));
  }
  SECTION("adamw, two steps: the decay before adam's step, by the step's rate") {
    Tensor w = to_tensor({1}, {1}), g = to_tensor({0.5}, {1});
    Tensor m = to_tensor({0}, {1}), s = to_tensor({0}, {1});
    // step 1: w = 1 * (1 - 0.1 * 0.5) - 0.1 * 0.5 / 0.5 = 0.85 (adam alone: 0.9)
    adamw_update(be, w, g, m, s, 0.1f, 0.9f, 0.999f, 1e-8f, 1, 0.f, 0.5f);
    CHECK(to_vec(w)[0] == Approx(0.85).epsilon(1e-6));
    CHECK(to_vec(m)[0] == Approx(0.05).epsilon(1e-6));  // the moments see g alone
    // step 2 at rate 0.2 (m_hat = 0.5, s_hat = 0.25): w = 0.85 * (1 - 0.2 * 0.5) - 0.2 * 0.5 / 0.5 = 0.565
    adamw_update(be, w, g, m, s, 0.2f, 0.9f, 0.999f, 1e-8f, 2, 0.f, 0.5f);
    CHECK(to_vec(w)[0] == Approx(0.565).epsilon(1e-5));
    // with L2 as well: g' = 0.5 + 0.1 * 1 from the undecayed w; the first step still moves by lr
    Tensor w2 = to_tensor({1}, {1}), m2 = to_tensor({0}, {1}), s2 = to_tensor({0}, {1});
    adamw_update(be, w2, g, m2, s2, 0.1f, 0.9f, 0.999f, 1e-8f, 1, 0.1f, 0.5f);
    CHECK(to_vec(m2)[0] == Approx(0.06).epsilon(1e-6));
    CHECK(to_vec(w2)[0] == Approx(0.85).epsilon(1e-6));
    // WeightDecay 0 is adam's update bit for bit.
    Tensor wa = to_tensor({1, -3}, {2}), wb = wa.clone(), ga = to_tensor({0.25, 0.7}, {2});
    Tensor ma = to_tensor({0.1, -0.2}, {2}), sa = to_tensor({0.01, 0.02}, {2}), mb = ma.clone(), sb = sa.clone();
    adamw_update(be, wa, ga, ma, sa, 0.01f, 0.9f, 0.999f, 1e-8f, 3, 0.01f, 0.f);
    adam_update(be, wb, ga, mb, sb, 0.01f, 0.9f, 0.999f, 1e-8f, 3, 0.01f);
    CHECK(to_vec(wa) == to_vec(wb));
    CHECK(to_vec(wa)[0] != 1.f);
  }
  SECTION("rmsprop") {
    Tensor w = to_tensor({1}, {1}), g = to_tensor({0.5}, {1}), s = to_tensor({0}, {1});
    rmsprop_update(be, w, g, s, 0.01f, 0.9f, 1e-8f, 0.f);
    // s = 0.1 * 0.25 = 0.025; w -= 0.01 * 0.5 / sqrt(0.025)
    CHECK(to_vec(s)[0] == Approx(0.025).epsilon(1e-6));
    CHECK(to_vec(w)[0] == Approx(1 - 0.005 / std::sqrt(0.025)).epsilon(1e-6));
    rmsprop_update(be, w, g, s, 0.01f, 0.9f, 1e-8f, 0.2f);
    const double w1 = 1 - 0.005 / std::sqrt(0.025), g1 = 0.5 + 0.2 * w1;
    const double s1 = 0.9 * 0.025 + 0.1 * g1 * g1;
    CHECK(to_vec(w)[0] == Approx(w1 - 0.01 * g1 / std::sqrt(s1)).epsilon(1e-6));
  }
}

TEST_CASE("dropout mask is reproducible, thread-independent and drops about p", "[backend][cpu]") {
  Backend& be = cpu_backend();
  const int64_t n = 100000;
  const float p = 0.3f;
  Rng rng(9);
  Tensor x = random_tensor(Shape{n}, rng);
  Tensor y(Shape{n}), mask(Shape{n}), y2(Shape{n}), mask2(Shape{n});
  be.dropout_forward(x, y, mask, p, 42, 7);
  Vec m = to_vec(mask), xv = to_vec(x), yv = to_vec(y);
  int64_t zeros = 0, bad = 0, wrong_y = 0;
  for (int64_t i = 0; i < n; ++i) {
    zeros += m[i] == 0;
    bad += !(m[i] == 0 || m[i] == static_cast<double>(1.f / (1.f - p)));
    wrong_y += yv[i] != static_cast<double>(static_cast<float>(xv[i]) * static_cast<float>(m[i]));
  }
  CHECK(bad == 0);
  CHECK(wrong_y == 0);
  CHECK(static_cast<double>(zeros) / n == Approx(p).margin(0.01));

  const int threads = cpu_threads();
  cpu_set_threads(1);
  be.dropout_forward(x, y2, mask2, p, 42, 7);
  cpu_set_threads(threads);
  CHECK(to_vec(mask2) == m);
  CHECK(to_vec(y2) == yv);

  be.dropout_forward(x, y2, mask2, p, 42, 8);  // another stream: another mask
  int64_t same = 0;
  Vec m2 = to_vec(mask2);
  for (int64_t i = 0; i < n; ++i) same += m2[i] == m[i];
  CHECK(same < n * 0.7);  // independent masks agree on p^2 + (1-p)^2 = 58% of elements

  be.dropout_forward(x, y2, mask2, 0.f, 42, 7);
  CHECK(to_vec(y2) == xv);
}

}  // namespace dlt::test
