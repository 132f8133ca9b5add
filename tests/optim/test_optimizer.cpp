// Solver steps against closed-form updates: sgdm with momentum, adam's bias correction,
// rmsprop, per-parameter learn-rate and L2 factors, frozen parameters, the three gradient
// clipping methods and the piecewise schedule.
#include <catch2/catch.hpp>
#include <cmath>

#include "optim/optimizer.h"
#include "optim/schedule.h"

using namespace dlt;

namespace {

struct Fixture {
  Param a, b;
  Fixture(std::vector<float> wa, std::vector<float> ga, std::vector<float> wb, std::vector<float> gb) {
    setup(a, "Weights", wa, ga);
    setup(b, "Bias", wb, gb);
  }
  static void setup(Param& p, const char* name, const std::vector<float>& w, const std::vector<float>& g) {
    p.name = name;
    p.shape = Shape{static_cast<int64_t>(w.size())};
    p.value = Tensor(p.shape);
    p.grad = Tensor(p.shape);
    std::copy(w.begin(), w.end(), p.value.data());
    std::copy(g.begin(), g.end(), p.grad.data());
  }
  std::vector<Param*> params() { return {&a, &b}; }
};

TrainingOptions options(const std::string& solver) {
  TrainingOptions o;
  REQUIRE(parse_choice(solver, &o.solver));
  o.l2_regularization = 0.1;
  o.momentum = 0.9;
  o.resolve_defaults();
  return o;
}

}  // namespace

TEST_CASE("sgdm: two steps with momentum, L2 and learn-rate / L2 factors", "[optim]") {
  Fixture f({1.0f, -2.0f}, {0.5f, 0.25f}, {3.0f}, {-1.0f});
  f.a.learn_rate_factor = 2.0f;
  f.b.l2_factor = 0.0f;  // MATLAB's BiasL2Factor default
  Optimizer opt(options("sgdm"), f.params());
  const double lr = 0.1;
  // a: lr 0.2, l2 0.1.  v1 = -0.2 (g + 0.1 w); w1 = w + v1
  double w0 = 1.0, g = 0.5;
  double v1 = -0.2 * (g + 0.1 * w0), w1 = w0 + v1;
  double v2 = 0.9 * v1 - 0.2 * (g + 0.1 * w1), w2 = w1 + v2;
  // b: lr 0.1, no L2
  double bv1 = -0.1 * -1.0, b1 = 3.0 + bv1, bv2 = 0.9 * bv1 - 0.1 * -1.0, b2 = b1 + bv2;
  opt.step(lr);
  CHECK(f.a.value.data()[0] == Approx(w1).epsilon(1e-6));
  opt.step(lr);  // gradients unchanged
  CHECK(f.a.value.data()[0] == Approx(w2).epsilon(1e-6));
  CHECK(f.b.value.data()[0] == Approx(b2).epsilon(1e-6));
}

TEST_CASE("frozen parameters (learn-rate factor 0) never move", "[optim]") {
  Fixture f({1.0f, 2.0f}, {5.0f, 5.0f}, {3.0f}, {1.0f});
  f.a.learn_rate_factor = 0.0f;
  Optimizer opt(options("adam"), f.params());
  opt.step(0.01);
  opt.step(0.01);
  CHECK(f.a.value.data()[0] == 1.0f);
  CHECK(f.a.value.data()[1] == 2.0f);
  CHECK(f.b.value.data()[0] != 3.0f);
}

TEST_CASE("adam: the first step moves each weight by about lr against the gradient", "[optim]") {
  Fixture f({1.0f, -1.0f}, {0.3f, -0.002f}, {0.0f}, {1e-3f});
  TrainingOptions o = options("adam");
  o.l2_regularization = 0;
  Optimizer opt(o, f.params());
  opt.step(0.01);
  // m_hat = g, s_hat = g^2  =>  w -= lr * g / (|g| + eps)
  CHECK(f.a.value.data()[0] == Approx(1.0 - 0.01 * 0.3 / (0.3 + 1e-8)).epsilon(1e-6));
  CHECK(f.a.value.data()[1] == Approx(-1.0 + 0.01).epsilon(1e-5));
  CHECK(opt.steps() == 1);
}

TEST_CASE("rmsprop: closed form of one step", "[optim]") {
  Fixture f({2.0f}, {0.4f}, {0.0f}, {0.0f});
  TrainingOptions o = options("rmsprop");
  Optimizer opt(o, f.params());
  double g = 0.4 + 0.1 * 2.0, s = (1 - 0.9) * g * g;
  opt.step(0.05);
  CHECK(f.a.value.data()[0] == Approx(2.0 - 0.05 * g / (std::sqrt(s) + 1e-8)).epsilon(1e-6));
}

TEST_CASE("gradient clipping: l2norm, global-l2norm and absolute-value", "[optim]") {
  TrainingOptions o = options("sgdm");
  o.l2_regularization = 0;
  o.momentum = 0;
  o.gradient_threshold = 1.0;
  SECTION("l2norm clips each parameter to norm 1") {
    Fixture f({0, 0}, {3, 4}, {0}, {0.5f});
    o.gradient_threshold_method = GradientThresholdMethod::kL2Norm;
    Optimizer(o, f.params()).step(1.0);
    CHECK(f.a.value.data()[0] == Approx(-0.6));
    CHECK(f.a.value.data()[1] == Approx(-0.8));
    CHECK(f.b.value.data()[0] == Approx(-0.5));  // under the threshold: unchanged
  }
  SECTION("global-l2norm scales all by the same factor") {
    Fixture f({0, 0}, {3, 4}, {0}, {12});
    o.gradient_threshold_method = GradientThresholdMethod::kGlobalL2Norm;
    Optimizer(o, f.params()).step(1.0);  // norm 13
    CHECK(f.a.value.data()[0] == Approx(-3.0 / 13));
    CHECK(f.b.value.data()[0] == Approx(-12.0 / 13));
  }
  SECTION("exploding gradients (sum of squares above FLT_MAX) are clipped, not zeroed") {
    Fixture f({0, 0}, {3e19f, 4e19f}, {0}, {1.2e20f});
    for (const char* m : {"l2norm", "global-l2norm"}) {
      INFO(m);
      f.a.value.data()[0] = f.a.value.data()[1] = f.b.value.data()[0] = 0;
      f.a.grad.data()[0] = 3e19f, f.a.grad.data()[1] = 4e19f, f.b.grad.data()[0] = 1.2e20f;
      REQUIRE(parse_choice(m, &o.gradient_threshold_method));
      Optimizer(o, f.params()).step(1.0);
      const bool global = std::string(m) == "global-l2norm";
      CHECK(f.a.value.data()[0] == Approx(global ? -3.0 / 13 : -0.6));
      CHECK(f.a.value.data()[1] == Approx(global ? -4.0 / 13 : -0.8));
      CHECK(f.b.value.data()[0] == Approx(global ? -12.0 / 13 : -1.0));
    }
  }
  SECTION("absolute-value clamps each element") {
    Fixture f({0, 0}, {3, -0.5f}, {0}, {-7});
    o.gradient_threshold_method = GradientThresholdMethod::kAbsoluteValue;
    Optimizer(o, f.params()).step(1.0);
    CHECK(f.a.value.data()[0] == Approx(-1.0));
    CHECK(f.a.value.data()[1] == Approx(0.5));
    CHECK(f.b.value.data()[0] == Approx(1.0));
  }
}

// The rate of an epoch's first iteration, 7 iterations per epoch.
static double learn_rate_at(const TrainingOptions& o, int64_t epoch) {
  return o.initial_learn_rate * make_learn_rate_schedule(o)->factor(epoch * 7, 7);
}

TEST_CASE("piecewise schedule drops every period", "[optim]") {
  TrainingOptions o;
  o.initial_learn_rate = 0.001;
  o.learn_rate_schedule = {default_schedule(ScheduleKind::piecewise)};
  o.learn_rate_schedule[0].named = true;  // LearnRateSchedule: piecewise
  o.learn_rate_drop_factor = 0.1;
  o.learn_rate_drop_period = 30;
  CHECK(learn_rate_at(o, 0) == Approx(0.001));
  CHECK(learn_rate_at(o, 29) == Approx(0.001));
  CHECK(learn_rate_at(o, 30) == Approx(0.0001));
  CHECK(learn_rate_at(o, 65) == Approx(0.00001));
  o.learn_rate_schedule.clear();  // none
  CHECK(learn_rate_at(o, 65) == Approx(0.001));
}
