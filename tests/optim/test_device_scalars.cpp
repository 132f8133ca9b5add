// The optimizer's device-scalar mode (what a captured CUDA graph replays): the per-step
// learning rates and Adam's corrections come from a tensor refreshed by prepare(), and the
// weights and solver state are bit-identical to the by-value updates for every solver, with a
// learning rate that changes between steps, factors, a frozen parameter and clipping.
#include <catch2/catch.hpp>

#include "optim/optimizer.h"
#include "support/tensor_utils.h"

namespace dlt::test {

namespace {

struct Params {
  Param a, b, c;
  explicit Params(uint64_t seed) {
    Rng rng(seed);
    init(a, "Weights", 300, rng);
    init(b, "Bias", 7, rng);
    init(c, "Frozen", 5, rng);
    a.learn_rate_factor = 1.5f;
    b.l2_factor = 0.f;
    c.learn_rate_factor = 0.f;  // frozen
  }
  static void init(Param& p, const char* name, int64_t n, Rng& rng) {
    p.name = name;
    p.shape = Shape{n};
    p.value = random_tensor(p.shape, rng, -1.f, 1.f);
    p.grad = Tensor(p.shape);
  }
  std::vector<Param*> list() { return {&a, &b, &c}; }
  // Gradients of step k, the same for both runs.
  void set_grads(int k) {
    Rng rng(100 + static_cast<uint64_t>(k));
    for (Param* p : list()) {
      Tensor g = random_tensor(p->shape, rng, -2.f, 2.f);
      p->grad.copy_from(g);
    }
  }
};

TrainingOptions options(const std::string& solver, const std::string& clip) {
  TrainingOptions o;
  REQUIRE(parse_choice(solver, &o.solver));
  o.l2_regularization = 0.01;
  o.l2_regularization_set = true;  // adamw too: L2 besides the decay
  o.weight_decay = 0.05;           // adamw's
  o.momentum = 0.9;
  if (!clip.empty()) {
    o.gradient_threshold = 0.5;
    REQUIRE(parse_choice(clip, &o.gradient_threshold_method));
  }
  o.resolve_defaults();
  return o;
}

// Runs 6 steps with a learning rate that drops after 3; mode 0: step(lr) by value; 1: step(lr)
// with device scalars; 2: prepare(lr) + update().
Vec run(const TrainingOptions& o, int mode) {
  Params ps(5);
  Optimizer opt(o, ps.list());
  if (mode > 0) opt.set_device_scalars(true);
  CHECK(opt.device_scalars() == (mode > 0));
  for (int k = 0; k < 6; ++k) {
    ps.set_grads(k);
    const double lr = k < 3 ? 0.01 : 0.002;
    if (mode < 2) {
      opt.step(lr);
    } else {
      opt.prepare(lr);
      opt.update();
    }
  }
  CHECK(opt.steps() == 6);
  Vec out;
  for (Param* p : ps.list()) {
    Vec v = to_vec(p->value);
    out.insert(out.end(), v.begin(), v.end());
  }
  for (const Optimizer::Slot& s : opt.state()) {
    Vec v = to_vec(*s.tensor);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

TEST_CASE("device scalars: bit-identical updates for sgdm, adam, rmsprop and adamw", "[optim]") {
  for (const std::string solver : {"sgdm", "adam", "rmsprop", "adamw"}) {
    for (const std::string clip : {"", "absolute-value", "global-l2norm"}) {
      INFO(solver << " clip '" << clip << "'");
      const TrainingOptions o = options(solver, clip);
      const Vec by_value = run(o, 0);
      const Vec initial = to_vec(Params(5).a.value);
      for (int mode : {1, 2}) {
        INFO("mode " << mode);
        const Vec got = run(o, mode);
        REQUIRE(got.size() == by_value.size());
        int64_t differ = 0;
        for (size_t i = 0; i < got.size(); ++i) differ += got[i] != by_value[i];
        CHECK(differ == 0);
      }
      // The updates did something (the comparison is not between two untouched copies).
      int64_t moved = 0;
      for (size_t i = 0; i < initial.size(); ++i) moved += initial[i] != by_value[i];
      CHECK(moved > 250);
    }
  }
}

TEST_CASE("device scalars: update needs the step's prepare", "[optim]") {
  Params ps(1);
  Optimizer opt(options("adam", ""), ps.list());
  CHECK_THROWS(opt.prepare(0.1));  // not in device-scalar mode
  opt.set_device_scalars(true);
  CHECK_THROWS(opt.update());  // no prepare yet
  ps.set_grads(0);
  opt.prepare(0.1);
  opt.update();
  opt.update();      // a failed capture's step, issued again directly
  opt.prepare(0.1);  // step 2 ran as a replayed graph: no update() call
  opt.prepare(0.1);
  CHECK(opt.steps() == 3);
  opt.update();
  opt.set_steps(7);  // a resumed run: its first step must be prepared
  CHECK_THROWS(opt.update());
  opt.set_device_scalars(false);
  CHECK_FALSE(opt.device_scalars());
  CHECK_THROWS(opt.update());
}

}  // namespace dlt::test
