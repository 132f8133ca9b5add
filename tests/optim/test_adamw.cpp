// Solver: adamw (dltrain's, PyTorch's AdamW) through the Optimizer on the CPU against PyTorch's
// torch.optim.AdamW on fixed numbers (tests/data/optim/torch_adamw.txt, written by
// make_torch_adamw.py beside it): several steps with a changing rate, decoupled weight decay
// with the per-parameter L2 and learn-rate factors, bias correction, and an L2 term besides.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "optim/optimizer.h"
#include "support/tensor_utils.h"

namespace dlt::test {

namespace {

// One case of torch_adamw.txt: its lines by key.
struct AdamwCase {
  std::string name;
  std::map<std::string, Vec> values;
  const Vec& at(const std::string& key) const {
    INFO("torch_adamw.txt: case '" << name << "' needs a '" << key << "' line");
    REQUIRE(values.count(key) == 1);
    return values.at(key);
  }
  double one(const std::string& key) const { return at(key).at(0); }
};

std::vector<AdamwCase> read_cases() {
  const std::string path = std::string(DLT_SOURCE_DIR) + "/tests/data/optim/torch_adamw.txt";
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<AdamwCase> cases;
  std::string text;
  while (std::getline(in, text)) {
    std::istringstream ls(text);
    std::string key;
    if (!(ls >> key) || key[0] == '#' || key == "end") continue;
    if (key == "case") {
      cases.emplace_back();
      std::getline(ls >> std::ws, cases.back().name);
      continue;
    }
    REQUIRE(!cases.empty());
    Vec v;
    for (double x; ls >> x;) v.push_back(x);
    cases.back().values[key] = v;
  }
  return cases;
}

// The parameters of a case, at their initial values and factors.
struct Params {
  std::vector<Param> ps;
  explicit Params(const AdamwCase& c) : ps(static_cast<size_t>(c.one("params"))) {
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::string p = "p" + std::to_string(i) + ".";
      Param& q = ps[i];
      q.name = "p" + std::to_string(i);
      const Vec& w0 = c.at(p + "w0");
      q.shape = Shape{static_cast<int64_t>(w0.size())};
      q.value = to_tensor(w0, q.shape);
      q.grad = Tensor::zeros(q.shape);
      q.learn_rate_factor = static_cast<float>(c.one(p + "lr_factor"));
      q.l2_factor = static_cast<float>(c.one(p + "l2_factor"));
    }
  }
  std::vector<Param*> list() {
    std::vector<Param*> out;
    for (Param& p : ps) out.push_back(&p);
    return out;
  }
};

TrainingOptions options_of(const AdamwCase& c, Solver solver) {
  TrainingOptions o;
  o.solver = solver;
  o.weight_decay = c.one("weight_decay");
  o.l2_regularization = c.one("l2");
  o.l2_regularization_set = true;
  o.gradient_decay_factor = c.one("beta1");
  o.squared_gradient_decay_factor = c.one("beta2");
  o.squared_gradient_decay_factor_set = true;
  o.epsilon = c.one("eps");
  o.resolve_defaults();
  return o;
}

// Runs the case's steps; `check` compares each step's weights with PyTorch's. Returns the
// largest |difference| of the final weights from PyTorch's.
double run(const AdamwCase& c, Solver solver, bool check) {
  Params ps(c);
  Optimizer opt(options_of(c, solver), ps.list());
  const Vec& lrs = c.at("lr");
  double worst = 0;
  for (size_t t = 1; t <= lrs.size(); ++t) {
    for (size_t i = 0; i < ps.ps.size(); ++i)
      ps.ps[i].grad.copy_from(to_tensor(c.at("p" + std::to_string(i) + ".g" + std::to_string(t)), ps.ps[i].shape));
    opt.step(lrs[t - 1]);
    for (size_t i = 0; i < ps.ps.size(); ++i) {
      INFO("case " << c.name << ", parameter " << i << ", step " << t);
      const Vec want = c.at("p" + std::to_string(i) + ".w" + std::to_string(t)), got = to_vec(ps.ps[i].value);
      REQUIRE(got.size() == want.size());
      for (size_t j = 0; j < got.size(); ++j) {
        if (check) CHECK(std::abs(got[j] - want[j]) <= 2e-6 + 1e-6 * std::abs(want[j]));
        if (t == lrs.size()) worst = std::max(worst, std::abs(got[j] - want[j]));
      }
    }
  }
  CHECK(opt.steps() == static_cast<int64_t>(lrs.size()));
  if (!check) return worst;
  // Adam's moments (the checkpointed state, "pI/m" and "pI/s"): PyTorch's exp_avg and exp_avg_sq.
  std::map<std::string, Tensor*> state;
  for (const Optimizer::Slot& s : opt.state()) state[s.name] = s.tensor;
  REQUIRE(state.size() == 2 * ps.ps.size());
  for (size_t i = 0; i < ps.ps.size(); ++i)
    for (const char* k : {"m", "s"}) {
      const std::string key = "p" + std::to_string(i) + "/" + k;
      INFO("case " << c.name << ", state " << key);
      REQUIRE(state.count(key) == 1);
      const Vec want = c.at("p" + std::to_string(i) + "." + k), got = to_vec(*state[key]);
      REQUIRE(got.size() == want.size());
      for (size_t j = 0; j < got.size(); ++j) CHECK(std::abs(got[j] - want[j]) <= 1e-7 + 1e-5 * std::abs(want[j]));
    }
  return worst;
}

}  // namespace

TEST_CASE("adamw: Optimizer steps agree with PyTorch's AdamW (torch_adamw.txt)", "[optim][adamw]") {
  const std::vector<AdamwCase> cases = read_cases();
  REQUIRE(cases.size() == 3);
  for (const AdamwCase& c : cases) {
    INFO("case " << c.name);
    CHECK(run(c, Solver::kAdamW, true) <= 2e-6 + 4e-6);
    // The decay is what separates it from adam on the same numbers, far beyond the tolerance.
    CHECK(run(c, Solver::kAdam, false) > 1e-4);
  }
}

TEST_CASE("adamw: a bias (BiasL2Factor 0) is not decayed; WeightDecay scales with the L2 factor", "[optim][adamw]") {
  Param w, b;
  for (Param* p : {&w, &b}) {
    p->shape = Shape{1};
    p->value = to_tensor({2}, p->shape);
    p->grad = to_tensor({0.5}, p->shape);
  }
  b.l2_factor = 0.f;
  TrainingOptions o;
  o.solver = Solver::kAdamW;
  o.weight_decay = 0.5;
  o.resolve_defaults();
  CHECK(o.l2_regularization == 0);
  Optimizer opt(o, {&w, &b});
  opt.step(0.1);
  // First step: adam moves each by lr; w is decayed by lr * WeightDecay first.
  CHECK(to_vec(w.value)[0] == Approx(2 * (1 - 0.1 * 0.5) - 0.1).epsilon(1e-6));
  CHECK(to_vec(b.value)[0] == Approx(2 - 0.1).epsilon(1e-6));
}

}  // namespace dlt::test
