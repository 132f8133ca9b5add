// The CPU loss kernels other than cross-entropy (Backend::loss): values worked out by hand,
// PyTorch's losses and gradients on fixed inputs (tests/data/losses/torch_losses.txt, written by
// make_torch_losses.py beside it) and the errors of bad inputs. The agreement and gradient rows
// (loss_rows.h, gradient_rows.h) hold them to the double references on random inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/loss.h"
#include "support/tensor_utils.h"
#include "util/error.h"

namespace dlt::test {
namespace {

Tensor labels_of(const std::vector<int32_t>& v) {
  Tensor t(Shape{static_cast<int64_t>(v.size())}, Device::cpu(), DType::kI32);
  for (size_t i = 0; i < v.size(); ++i) t.data_i32()[i] = v[i];
  return t;
}

// The mean loss as training reads it: loss_async, then read_loss_totals (which throws for bad
// labels and targets).
LossTotals read_loss(const Tensor& outputs, const Tensor& targets, Tensor& grad, const LossOptions& opt) {
  Backend& be = cpu_backend();
  Tensor totals(Shape{Backend::kLossTotalsFloats});
  be.loss_async(outputs, targets, grad, totals, opt);
  return be.read_loss_totals(totals, targets);
}

LossOptions options(LossKind kind, int64_t images) {
  LossOptions opt;
  opt.kind = kind;
  opt.images = images;
  return opt;
}

}  // namespace

TEST_CASE("regression losses by hand: mse, mae, huber and their metric sums", "[backend][cpu][loss]") {
  // Two images of two responses: errors 1, 0, -2, 0; the first target is 0 (not in MAPE).
  Tensor y = to_tensor({1, 2, 3, 4}, {2, 2}), t = to_tensor({0, 2, 5, 4}, {2, 2}), g(Shape{2, 2});
  struct Case {
    LossKind kind;
    double loss;
    Vec grad;
  };
  for (const Case& c : {Case{LossKind::kMse, (1 + 4) / 2.0 / 2, {0.5, 0, -1, 0}},
                        Case{LossKind::kMae, (1 + 2) / 2.0, {0.5, 0, -0.5, 0}},
                        Case{LossKind::kHuber, (0.5 + 1.5) / 2, {0.5, 0, -0.5, 0}}}) {
    INFO("kind " << static_cast<int>(c.kind));
    const LossTotals r = read_loss(y, t, g, options(c.kind, 2));
    CHECK(r.loss_sum == Approx(c.loss).epsilon(1e-12));
    CHECK(r.weight_sum == 2);
    CHECK(to_vec(g) == c.grad);
    CHECK(r.sq_sum == 5);
    CHECK(r.abs_sum == 3);
    CHECK(r.ape_sum == Approx(2.0 / 5).epsilon(1e-12));
    CHECK(r.ape_count == 3);
    CHECK(r.values == 4);
    CHECK(r.counted == 2);
    CHECK(r.classes == 2);
  }
  // Huber's transition point: at d = 3 both errors are quadratic (as mse).
  LossOptions opt = options(LossKind::kHuber, 2);
  opt.huber_delta = 3.f;
  CHECK(read_loss(y, t, g, opt).loss_sum == Approx(1.25).epsilon(1e-12));
}

TEST_CASE("binary cross-entropy by hand: loss, gradient, tp/fp/fn and exact matches", "[backend][cpu][loss]") {
  Tensor p = to_tensor({0.8, 0.3, 0.6, 0.1}, {2, 2}), t = to_tensor({1, 0, 0, 0}, {2, 2}), g(Shape{2, 2});
  const LossTotals r = read_loss(p, t, g, options(LossKind::kBinaryCrossEntropy, 2));
  CHECK(r.loss_sum == Approx(-(std::log(0.8) + std::log(0.7) + std::log(0.4) + std::log(0.9)) / 2).epsilon(1e-6));
  CHECK(all_close(to_vec(g), {-0.1, 0.15, 0.3, 0.05}, 1e-6, 1e-7));
  CHECK(r.tp == 1);
  CHECK(r.fp == 1);  // 0.6 for a 0
  CHECK(r.fn == 0);
  CHECK(r.exact == 1);  // the first image
  CHECK(r.values == 4);
  CHECK(r.counted == 2);
  // A probability of 0 for a present class: a large finite loss (log at least log 1e-37).
  Tensor zero = to_tensor({0, 1}, {1, 2}), ones = to_tensor({1, 1}, {1, 2}), none;
  const LossTotals z = read_loss(zero, ones, none, options(LossKind::kBinaryCrossEntropy, 1));
  CHECK(z.loss_sum == Approx(-std::log(1e-37)).epsilon(1e-6));
  CHECK(z.fn == 1);
  CHECK(z.tp == 1);
}

TEST_CASE("generalized Dice and focal cross-entropy by hand", "[backend][cpu][loss]") {
  // One image of two pixels, both class 0: w_0 = 1/4, w_1 = 0 (absent); A = (0.8 + 0.4) / 4,
  // B = (0.64 + 1 + 0.16 + 1) / 4, loss 1 - 2 A / B = 1 / 7.
  Tensor p = to_tensor({0.8, 0.2, 0.4, 0.6}, {1, 2, 1, 2}), g(p.shape());
  const LossTotals d = read_loss(p, labels_of({0, 0}), g, options(LossKind::kGeneralizedDice, 1));
  CHECK(d.loss_sum == Approx(1.0 / 7).epsilon(1e-6));
  CHECK(d.correct == 1);
  CHECK(d.counted == 2);
  // Every pixel undefined: no loss, no gradient.
  LossOptions opt = options(LossKind::kGeneralizedDice, 1);
  opt.undefined_labels = true;
  const LossTotals u = read_loss(p, labels_of({-1, -1}), g, opt);
  CHECK(u.loss_sum == 0);
  CHECK(u.weight_sum == 0);
  CHECK(to_vec(g) == Vec(4, 0.0));
  // Focal: -alpha (1 - p)^gamma log p = -0.25 * 0.2^2 * log 0.8 for the first row; the second
  // row (p = 0.6, class weight 3) weighs 3 times; the mean divides by 1 + 3.
  opt = options(LossKind::kFocalCrossEntropy, 2);
  opt.class_weights = to_tensor({1, 3}, {2});
  const LossTotals f = read_loss(p, labels_of({0, 1}), g, opt);
  CHECK(f.loss_sum == Approx((-0.25 * 0.04 * std::log(0.8) - 3 * 0.25 * 0.16 * std::log(0.6)) / 4).epsilon(1e-6));
  CHECK(f.weight_sum == 4);
  CHECK(f.correct == 2);
}

namespace {

// One case of torch_losses.txt: its lines by key.
struct TorchCase {
  std::string name;
  std::map<std::string, Vec> values;
  std::string kind;
  const Vec& at(const std::string& key) const {
    INFO("torch_losses.txt: case '" << name << "' needs a '" << key << "' line");
    REQUIRE(values.count(key) == 1);
    return values.at(key);
  }
};

std::vector<TorchCase> read_torch_cases() {
  const std::string path = std::string(DLT_SOURCE_DIR) + "/tests/data/losses/torch_losses.txt";
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<TorchCase> cases;
  std::string text;
  while (std::getline(in, text)) {
    std::istringstream ls(text);
    std::string key;
    if (!(ls >> key) || key[0] == '#') continue;
    if (key == "case") {
      cases.emplace_back();
      std::getline(ls >> std::ws, cases.back().name);
    } else if (key == "kind") {
      ls >> cases.back().kind;
    } else if (key != "end") {
      Vec v;
      for (double x; ls >> x;) v.push_back(x);
      cases.back().values[key] = v;
    }
  }
  return cases;
}

Vec softmax_rows(const Vec& x, int64_t c) {
  Vec p(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(c); ++r) {
    double m = x[r * c], s = 0;
    for (int64_t j = 1; j < c; ++j) m = std::max(m, x[r * c + j]);
    for (int64_t j = 0; j < c; ++j) s += p[r * c + j] = std::exp(x[r * c + j] - m);
    for (int64_t j = 0; j < c; ++j) p[r * c + j] /= s;
  }
  return p;
}

}  // namespace

TEST_CASE("loss kernels agree with PyTorch (torch_losses.txt, MATLAB's factors)", "[backend][cpu][loss]") {
  const std::vector<TorchCase> cases = read_torch_cases();
  REQUIRE(cases.size() == 10);
  for (const TorchCase& tc : cases) {
    INFO("case " << tc.name);
    const int64_t n = static_cast<int64_t>(tc.at("images")[0]), w = static_cast<int64_t>(tc.at("width")[0]);
    const double factor = tc.at("pytorch_factor")[0];  // PyTorch's reduction = dltrain's mean x factor
    LossOptions opt = options(LossKind::kMse, n);
    Tensor outputs, targets;
    if (tc.kind == "mse" || tc.kind == "mae" || tc.kind == "huber") {
      opt.kind = tc.kind == "mse" ? LossKind::kMse : tc.kind == "mae" ? LossKind::kMae : LossKind::kHuber;
      opt.huber_delta = static_cast<float>(tc.at("delta")[0]);
      outputs = to_tensor(tc.at("outputs"), {n, w});
      targets = to_tensor(tc.at("targets"), {n, w});
    } else if (tc.kind == "bce") {
      opt.kind = LossKind::kBinaryCrossEntropy;
      Vec p = tc.at("logits");
      for (double& v : p) v = 1 / (1 + std::exp(-v));
      outputs = to_tensor(p, {n, w});
      targets = to_tensor(tc.at("targets"), {n, w});
    } else {
      REQUIRE((tc.kind == "dice" || tc.kind == "focal" || tc.kind == "tversky"));
      const Vec& labels = tc.at("labels");
      opt.kind = tc.kind == "dice"    ? LossKind::kGeneralizedDice
                 : tc.kind == "focal" ? LossKind::kFocalCrossEntropy
                                      : LossKind::kTversky;
      opt.undefined_labels = true;
      if (tc.kind == "tversky") {
        opt.tversky_alpha = static_cast<float>(tc.at("alpha")[0]);
        opt.tversky_beta = static_cast<float>(tc.at("beta")[0]);
      }
      if (tc.kind == "focal") {
        opt.focal_gamma = static_cast<float>(tc.at("gamma")[0]);
        opt.focal_alpha = static_cast<float>(tc.at("alpha")[0]);
        if (tc.values.count("class_weights")) opt.class_weights = to_tensor(tc.at("class_weights"), {w});
      }
      outputs = to_tensor(softmax_rows(tc.at("logits"), w), {static_cast<int64_t>(labels.size()), w});
      std::vector<int32_t> lab;
      for (double l : labels) lab.push_back(static_cast<int32_t>(l));
      targets = labels_of(lab);
    }
    Tensor grad(outputs.shape());
    const LossTotals r = read_loss(outputs, targets, grad, opt);
    CHECK(r.loss_sum == Approx(tc.at("loss")[0] / factor).epsilon(1e-5));
    Vec want = tc.at("grad");
    for (double& v : want) v /= factor;
    const Vec got = to_vec(grad);
    INFO(compare(got, want).str());
    CHECK(all_close(got, want, 1e-4, 1e-6));
  }
}

TEST_CASE("loss errors: a label out of range, a binary target 0.5, Dice and Tversky with class weights",
          "[backend][cpu][loss]") {
  Tensor p = to_tensor({0.8, 0.2, 0.4, 0.6}, {2, 2}), g(Shape{2, 2});
  for (LossKind kind : {LossKind::kGeneralizedDice, LossKind::kFocalCrossEntropy, LossKind::kTversky}) {
    INFO("kind " << static_cast<int>(kind));
    CHECK_THROWS_WITH(read_loss(p, labels_of({1, 5}), g, options(kind, 2)),
                      Catch::Contains("label 5 of sample 1 is outside 0..1"));
    CHECK_THROWS_AS(read_loss(p, labels_of({1, 5}), g, options(kind, 2)), DataError);
    // -1 is a bad label unless undefined labels are allowed.
    CHECK_THROWS_AS(read_loss(p, labels_of({-1, 0}), g, options(kind, 2)), DataError);
  }
  Tensor half = to_tensor({1, 0, 0.5, 1}, {2, 2});
  CHECK_THROWS_WITH(read_loss(p, half, g, options(LossKind::kBinaryCrossEntropy, 2)),
                    Catch::Contains("target 0.5 of image 1, class 0 is not 0 or 1"));
  CHECK_THROWS_AS(read_loss(p, half, g, options(LossKind::kBinaryCrossEntropy, 2)), DataError);
  LossOptions dice = options(LossKind::kGeneralizedDice, 1);
  dice.class_weights = to_tensor({1, 2}, {2});
  CHECK_THROWS_WITH(read_loss(p, labels_of({0, 1}), g, dice), Catch::Contains("takes no class weights"));
  LossOptions tversky = options(LossKind::kTversky, 1);
  tversky.class_weights = to_tensor({1, 2}, {2});
  CHECK_THROWS_WITH(read_loss(p, labels_of({0, 1}), g, tversky), Catch::Contains("takes no class weights"));
  tversky = options(LossKind::kTversky, 1);
  tversky.tversky_alpha = tversky.tversky_beta = 0.f;
  CHECK_THROWS_WITH(read_loss(p, labels_of({0, 1}), g, tversky), Catch::Contains("not both 0"));
  tversky.tversky_beta = -1.f;
  CHECK_THROWS_WITH(read_loss(p, labels_of({0, 1}), g, tversky), Catch::Contains("must be >= 0"));
  LossOptions huber = options(LossKind::kHuber, 2);
  huber.huber_delta = 0.f;
  CHECK_THROWS_WITH(read_loss(p, p, g, huber), Catch::Contains("transition point must be > 0"));
  // Targets of another size than the outputs.
  CHECK_THROWS(read_loss(p, to_tensor({1, 0}, {2}), g, options(LossKind::kMse, 2)));
}

}  // namespace dlt::test
