// The CPU attention op (backend/attention_op.h) against PyTorch on fixed inputs
// (tests/data/attention/torch_attention.txt, written by make_torch_attention.py beside it), its
// argument checks, and a hidden timing (run with: dltrain_tests "[.bench]" -s). The agreement
// and gradient rows (attention_rows.h, gradient_rows.h) hold it to the double reference.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backend/attention_op.h"
#include "backend/cpu/cpu_backend.h"
#include "support/reference_attention.h"
#include "support/tensor_utils.h"
#include "util/timer.h"

namespace dlt::test {
namespace {

struct TorchCase {
  std::string name;
  std::map<std::string, Vec> values;
  const Vec& at(const std::string& key) const {
    INFO("torch_attention.txt: case '" << name << "' needs a '" << key << "' line");
    REQUIRE(values.count(key) == 1);
    return values.at(key);
  }
};

std::vector<TorchCase> read_torch_cases() {
  const std::string path = std::string(DLT_SOURCE_DIR) + "/tests/data/attention/torch_attention.txt";
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
    } else if (key != "end") {
      Vec v;
      for (double x; ls >> x;) v.push_back(x);
      cases.back().values[key] = v;
    }
  }
  return cases;
}

AttentionDesc desc_of(const Vec& s) {
  REQUIRE(s.size() == 8);
  auto i = [&](size_t k) { return static_cast<int64_t>(s[k]); };
  return {i(0), i(1), i(2), i(3), i(4), i(5), s[6] != 0, static_cast<float>(s[7])};
}

void check_rel(const char* what, const Tensor& got, const Vec& want, double tol) {
  const Comparison c = compare(got, want);
  INFO(what << ": " << c.str());
  CHECK(c.rel <= tol);
}

}  // namespace

TEST_CASE("cpu attention agrees with PyTorch (torch_attention.txt)", "[backend][cpu][attention]") {
  const std::vector<TorchCase> cases = read_torch_cases();
  REQUIRE(cases.size() == 5);
  Backend& be = cpu_backend();
  for (const TorchCase& tc : cases) {
    INFO("case " << tc.name);
    const AttentionDesc d = desc_of(tc.at("sizes"));
    // The inputs are float32 values written with 9 digits: rounded to float, they are exact.
    auto as_float = [](Vec x) {
      for (double& e : x) e = static_cast<float>(e);
      return x;
    };
    const Vec q = as_float(tc.at("q")), k = as_float(tc.at("k")), v = as_float(tc.at("v"));
    const Vec dout = as_float(tc.at("dO"));
    REQUIRE(static_cast<int64_t>(q.size()) == d.q_numel());
    REQUIRE(static_cast<int64_t>(k.size()) == d.k_numel());
    REQUIRE(static_cast<int64_t>(v.size()) == d.v_numel());
    REQUIRE(static_cast<int64_t>(dout.size()) == d.o_numel());
    // The double reference reads PyTorch's definition the same way (1e-12: both in float64).
    CHECK(compare(ref::attention_forward(d, q, k, v), tc.at("O")).rel <= 1e-12);
    auto op = be.make(d);
    Tensor tq = to_tensor(q, {d.q_numel()}), tk = to_tensor(k, {d.k_numel()}), tv = to_tensor(v, {d.v_numel()});
    Tensor to(Shape{d.o_numel()}), tdq(tq.shape()), tdk(tk.shape()), tdv(tv.shape());
    op->forward(tq, tk, tv, to);
    check_rel("O", to, tc.at("O"), 1e-5);
    op->backward(tq, tk, tv, to_tensor(dout, {d.o_numel()}), tdq, tdk, tdv);
    check_rel("dQ", tdq, tc.at("dQ"), 1e-5);
    check_rel("dK", tdk, tc.at("dK"), 1e-5);
    check_rel("dV", tdv, tc.at("dV"), 1e-5);
  }
}

TEST_CASE("cpu attention: the causal mask hides later keys", "[backend][cpu][attention]") {
  // Query 0 sees key 0 only: its output is V's first token, whatever the scores.
  Backend& be = cpu_backend();
  const AttentionDesc d{1, 2, 4, 4, 3, 2, true, 0.f};
  Rng rng(7);
  const Vec q = random_vec(d.q_numel(), rng, -3, 3), k = random_vec(d.k_numel(), rng, -3, 3);
  const Vec v = random_vec(d.v_numel(), rng);
  auto op = be.make(d);
  Tensor o(Shape{d.o_numel()});
  op->forward(to_tensor(q, {d.q_numel()}), to_tensor(k, {d.k_numel()}), to_tensor(v, {d.v_numel()}), o);
  const Vec got = to_vec(o);
  for (size_t c = 0; c < 4; ++c) CHECK(got[c] == Approx(v[c]).epsilon(1e-6));  // both heads' 2 channels
  // Changing the last key and value changes nothing for the first three queries.
  Vec k2 = k, v2 = v;
  for (int64_t c = 0; c < 6; ++c) k2[static_cast<size_t>(3 * 6 + c)] += 5;
  for (int64_t c = 0; c < 4; ++c) v2[static_cast<size_t>(3 * 4 + c)] -= 7;
  Tensor o2(Shape{d.o_numel()});
  op->forward(to_tensor(q, {d.q_numel()}), to_tensor(k2, {d.k_numel()}), to_tensor(v2, {d.v_numel()}), o2);
  const Vec got2 = to_vec(o2);
  for (size_t i = 0; i < 12; ++i) CHECK(got2[i] == got[i]);
  bool last_changed = false;
  for (size_t i = 12; i < 16; ++i) last_changed = last_changed || got2[i] != got[i];
  CHECK(last_changed);
}

TEST_CASE("cpu attention: argument checks", "[backend][cpu][attention]") {
  Backend& be = cpu_backend();
  AttentionDesc d{2, 3, 5, 4, 8, 6, false, 0.f};
  CHECK(d.scale_or_default() == Approx(1 / std::sqrt(8.0)));
  auto op = be.make(d);
  Tensor q(Shape{d.q_numel()}), k(Shape{d.k_numel()}), v(Shape{d.v_numel()}), o(Shape{d.o_numel()});
  Tensor dq(q.shape()), dk(k.shape()), dv(v.shape());
  CHECK_THROWS_WITH(op->backward(q, k, v, o, dq, dk, dv), Catch::Contains("backward before any forward"));
  Tensor wrong(Shape{d.k_numel() + 1});
  CHECK_THROWS_WITH(op->forward(q, wrong, v, o), Catch::Contains("attention: k must be 192 values on cpu (got 193)"));
  CHECK_THROWS_WITH(op->forward(q, k, v, q), Catch::Contains("attention: o must be 180 values"));
  d.heads = 0;
  CHECK_THROWS_WITH(be.make(d), Catch::Contains("attention: every size must be at least 1"));
}

// n = 32, 3 heads of 65 tokens, dims 64 (ViT-Tiny on 32x32 images, patch 4, a class token):
// forward then backward, the best of 5 rounds of 3.
TEST_CASE("cpu attention: forward + backward timing at 32x3x65x64", "[.bench]") {
  Backend& be = cpu_backend();
  const AttentionDesc d{32, 3, 65, 65, 64, 64, false, 0.f};
  Rng rng(3);
  auto op = be.make(d);
  Tensor q = random_tensor({d.q_numel()}, rng), k = random_tensor({d.k_numel()}, rng);
  Tensor v = random_tensor({d.v_numel()}, rng), dout = random_tensor({d.o_numel()}, rng);
  Tensor o(Shape{d.o_numel()}), dq(q.shape()), dk(k.shape()), dv(v.shape());
  auto step = [&] {
    op->forward(q, k, v, o);
    op->backward(q, k, v, dout, dq, dk, dv);
  };
  step();
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    Timer t;
    for (int i = 0; i < 3; ++i) step();
    best = std::min(best, t.seconds() * 1e3 / 3);
  }
  std::printf("attention 32x3x65x64 forward+backward: %.3f ms (%d threads) %s\n", best, cpu_threads(),
              impl_info(*op).c_str());
}

}  // namespace dlt::test
