// Synchronized batch norm (data-parallel): ranks on threads with an in-process all-reduce
// give the outputs, input gradients, parameter gradients and running statistics of one
// batchNormalization layer over the whole batch, for equal, uneven and empty shares, with
// and without the fused ReLU. Also the CPU op's global_stats mode and channel_moments.
#include <catch2/catch.hpp>

#include <barrier>
#include <cmath>
#include <functional>
#include <mutex>
#include <thread>

#include "dist/communicator.h"
#include "dist/data_parallel.h"
#include "layers/layer.h"
#include "support/grad_check.h"
#include "support/reference_ops.h"
#include "support/tensor_utils.h"

using namespace dlt;
using namespace dlt::test;

namespace {

// A world of `size` threads: all-reduce sums through shared doubles between barriers.
struct ThreadWorld {
  explicit ThreadWorld(int size) : size(size), bar(size) {}
  int size;
  std::barrier<> bar;
  std::mutex mu;
  std::vector<double> sum;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(ThreadWorld& w, int rank) : w_(w), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return w_.size; }
  void all_reduce_sum(double* v, int64_t n) override {
    w_.bar.arrive_and_wait();  // everyone has read the previous result
    if (rank_ == 0) w_.sum.assign(static_cast<size_t>(n), 0.0);
    w_.bar.arrive_and_wait();
    {
      std::lock_guard<std::mutex> lock(w_.mu);
      for (int64_t i = 0; i < n; ++i) w_.sum[static_cast<size_t>(i)] += v[i];
    }
    w_.bar.arrive_and_wait();
    for (int64_t i = 0; i < n; ++i) v[i] = w_.sum[static_cast<size_t>(i)];
  }
  void all_reduce_sum(Tensor& t) override {
    std::vector<double> v(t.data(), t.data() + t.numel());
    all_reduce_sum(v.data(), t.numel());
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(v[static_cast<size_t>(i)]);
  }
  void broadcast(Tensor&, int) override {}
  void barrier() override { w_.bar.arrive_and_wait(); }
  std::string kind() const override { return "threads"; }

 private:
  ThreadWorld& w_;
  int rank_;
};

struct BnRun {
  std::unique_ptr<Layer> layer;
  Tensor x, y, dy, dx;
};

const int64_t kH = 3, kW = 4, kC = 5;

// A batchNormalization layer with the given scale / offset, set up for n images (at least 1).
std::unique_ptr<Layer> make_bn(bool relu, const Tensor& scale, const Tensor& offset, int64_t n) {
  auto layer = make_layer(layer_spec("batchNormalization", {}, "bn"));
  layer->infer({Shape{kH, kW, kC}});
  for (Param& p : layer->params()) {
    p.value = Tensor(p.shape);
    p.grad = Tensor(p.shape);
  }
  for (State& s : layer->states()) s.value = Tensor(s.shape);
  Rng rng(1);
  layer->init_params(rng);
  layer->params()[0].value.copy_from(scale);
  layer->params()[1].value.copy_from(offset);
  Fusion fusion;
  fusion.relu = relu;
  layer->set_fusion(fusion);
  layer->setup(std::max<int64_t>(n, 1), backend_for(Device::cpu()));
  return layer;
}

// Images [begin, begin + n) of an (N, H, W, C) tensor, times s.
Tensor slice(const Tensor& t, int64_t begin, int64_t n, float s = 1.f) {
  const int64_t per = kH * kW * kC;
  Tensor out(Shape{n, kH, kW, kC});
  for (int64_t i = 0; i < n * per; ++i) out.data()[i] = s * t.data()[begin * per + i];
  return out;
}

double max_rel(const Tensor& got, const Tensor& want) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got.data()[i]) - want.data()[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want.data()[i])));
  }
  return worst / std::max(scale, 1e-30);
}

// What the ranks computed, gathered over the whole batch: y, the gradient of the global loss
// sum(y .* r) with respect to x (w_k * dx_k per rank), and the weighted parameter gradients.
struct Gathered {
  Tensor y, dx, dscale, doffset;
  std::vector<Tensor> trained_mean, trained_var;  // per rank
};

// Training forward + backward of the ranks' shares of x, synchronized, on threads.
Gathered run_ranks(const std::vector<int64_t>& shares, bool relu, const Tensor& x, const Tensor& r, const Tensor& scale,
                   const Tensor& offset) {
  const int64_t n = x.shape()[0];
  const int size = static_cast<int>(shares.size());
  ThreadWorld world(size);
  std::vector<BnRun> runs(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  int64_t begin = 0;
  for (int k = 0; k < size; ++k) {
    const int64_t nk = shares[static_cast<size_t>(k)];
    const double w = static_cast<double>(nk) / static_cast<double>(n);
    BnRun& run = runs[static_cast<size_t>(k)];
    run.layer = make_bn(relu, scale, offset, nk);
    run.x = slice(x, begin, nk);
    // dy of rank k's own mean loss L_k, where L = sum_k w_k L_k: r / w_k on its images.
    run.dy = slice(r, begin, nk, nk > 0 ? static_cast<float>(1.0 / w) : 0.f);
    run.y = Tensor(run.x.shape());
    run.dx = Tensor(run.x.shape());
    begin += nk;
    threads.emplace_back([&run, &world, k, w, n] {
      ThreadCommunicator comm(world, k);
      RunContext ctx{true, 7, 3};
      ctx.comm = &comm;
      ctx.weight = w;
      ctx.global_images = n;
      run.layer->forward({&run.x}, run.y, ctx);
      run.layer->backward({&run.x}, run.y, run.dy, {&run.dx}, ctx);
    });
  }
  for (auto& t : threads) t.join();

  Gathered g;
  g.y = Tensor(x.shape());
  g.dx = Tensor(x.shape());
  g.dscale = Tensor::zeros(Shape{kC});
  g.doffset = Tensor::zeros(Shape{kC});
  int64_t pos = 0;
  for (int k = 0; k < size; ++k) {
    const BnRun& run = runs[static_cast<size_t>(k)];
    const int64_t nk = shares[static_cast<size_t>(k)];
    const float w = static_cast<float>(nk) / static_cast<float>(n);
    for (int64_t i = 0; i < run.x.numel(); ++i) {
      g.y.data()[pos + i] = run.y.data()[i];
      g.dx.data()[pos + i] = w * run.dx.data()[i];
    }
    pos += run.x.numel();
    g.trained_mean.push_back(run.layer->states()[0].value);
    g.trained_var.push_back(run.layer->states()[1].value);
    if (nk == 0) continue;
    for (int64_t j = 0; j < kC; ++j) {
      g.dscale.data()[j] += w * run.layer->params()[0].grad.data()[j];
      g.doffset.data()[j] += w * run.layer->params()[1].grad.data()[j];
    }
  }
  return g;
}

struct Problem {
  Tensor x, r, scale, offset;
};

Problem make_problem(int64_t n) {
  Rng rng(7);
  Problem p;
  p.x = random_tensor(Shape{n, kH, kW, kC}, rng, -2.f, 3.f);
  p.r = random_tensor(Shape{n, kH, kW, kC}, rng);  // loss = sum(y .* r)
  p.scale = random_tensor(Shape{kC}, rng, 0.5f, 1.5f);
  p.offset = random_tensor(Shape{kC}, rng, -0.3f, 0.3f);
  return p;
}

// One training forward + backward of the whole batch in one process, then the same on
// ranks with `shares` images each (synchronized); compares everything.
void check_shares(const std::vector<int64_t>& shares, bool relu) {
  int64_t n = 0;
  for (int64_t s : shares) n += s;
  Problem p = make_problem(n);
  auto ref = make_bn(relu, p.scale, p.offset, n);
  Tensor y(p.x.shape()), dx(p.x.shape()), dy = p.r.clone();
  RunContext one{true, 7, 3};
  ref->forward({&p.x}, y, one);
  ref->backward({&p.x}, y, dy, {&dx}, one);

  Gathered g = run_ranks(shares, relu, p.x, p.r, p.scale, p.offset);
  INFO("shares " << Catch::Detail::stringify(shares) << (relu ? ", fused relu" : ""));
  CHECK(max_rel(g.y, y) < 1e-5);
  CHECK(max_rel(g.dx, dx) < 1e-5);
  CHECK(max_rel(g.dscale, ref->params()[0].grad) < 1e-5);
  CHECK(max_rel(g.doffset, ref->params()[1].grad) < 1e-5);
  for (size_t k = 0; k < shares.size(); ++k) {  // every rank, an empty one included, has the same running statistics
    CHECK(max_rel(g.trained_mean[k], ref->states()[0].value) < 1e-5);
    CHECK(max_rel(g.trained_var[k], ref->states()[1].value) < 1e-5);
  }
}

}  // namespace

TEST_CASE("synchronized batchNormalization on ranks equals one process", "[layers][dist]") {
  for (bool relu : {false, true}) {
    check_shares({3, 3}, relu);
    check_shares({5, 1}, relu);
    check_shares({6, 0}, relu);
    check_shares({0, 2, 4}, relu);
  }
}

TEST_CASE("synchronized batchNormalization: gradients match central differences of the global loss",
          "[layers][dist][grad]") {
  const std::vector<int64_t> shares{3, 1};
  Problem p = make_problem(4);
  Gathered g = run_ranks(shares, false, p.x, p.r, p.scale, p.offset);
  auto loss = [&] {
    Gathered h = run_ranks(shares, false, p.x, p.r, p.scale, p.offset);
    double l = 0;
    for (int64_t i = 0; i < h.y.numel(); ++i) l += static_cast<double>(h.y.data()[i]) * p.r.data()[i];
    return l;
  };
  int checked = 0, failed = 0;
  auto check = [&](Tensor& t, const Tensor& analytic, int64_t stride) {
    for (int64_t i = 0; i < t.numel(); i += stride) {
      const float orig = t.data()[i];
      const double h = 5e-3;
      t.data()[i] = static_cast<float>(orig + h);
      const double up = loss();
      t.data()[i] = static_cast<float>(orig - h);
      const double down = loss();
      t.data()[i] = orig;
      const double numeric = (up - down) / (2 * h), a = analytic.data()[i];
      ++checked;
      if (std::fabs(numeric - a) > 2e-3 + 2e-2 * std::max(std::fabs(numeric), std::fabs(a))) {
        ++failed;
        UNSCOPED_INFO("element " << i << ": analytic " << a << ", numeric " << numeric);
      }
    }
  };
  check(p.x, g.dx, 7);  // inputs on both ranks
  check(p.scale, g.dscale, 1);
  check(p.offset, g.doffset, 1);
  CHECK(checked > 30);
  CHECK(failed == 0);
}

TEST_CASE("batch norm op with global_stats normalizes with the given statistics", "[backend]") {
  Backend& be = backend_for(Device::cpu());
  Rng rng(3);
  for (bool relu : {false, true}) {
    BatchNormDesc d{4, 3, 2, 6, 1e-3f, relu, true};
    Vec x = random_vec(d.n * d.h * d.w * d.c, rng, -2, 2), dy = random_vec(d.n * d.h * d.w * d.c, rng);
    Vec scale = random_vec(d.c, rng, 0.5, 1.5), offset = random_vec(d.c, rng), mean = random_vec(d.c, rng, -0.5, 0.5);
    Vec var = random_vec(d.c, rng, 0.5, 2.0);
    Shape s{d.n, d.h, d.w, d.c}, c{d.c};
    Tensor tx = to_tensor(x, s), ty(s), tdy = to_tensor(dy, s), tdx(s), ds(c), dsh(c);
    Tensor tm = to_tensor(mean, c), tv = to_tensor(var, c), tsc = to_tensor(scale, c), tof = to_tensor(offset, c);
    auto op = be.make(d);
    op->forward_training(tx, tsc, tof, ty, tm, tv);
    CHECK(to_vec(tm) == mean);  // given statistics are inputs, not outputs
    CHECK(to_vec(tv) == var);
    Vec want = ref::bn_forward_inference(d, x, scale, offset, mean, var);  // applies the relu when fused
    CHECK(all_close(to_vec(ty), want, 1e-5, 1e-5));
    op->backward(tx, tdy, tsc, tm, tv, tdx, ds, dsh);
    Vec want_dx(x.size()), want_ds(d.c, 0.0), want_dsh(d.c, 0.0);
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t j = i % static_cast<size_t>(d.c);
      const double sigma = std::sqrt(var[j] + d.epsilon);
      const double g = relu && want[i] <= 0 ? 0.0 : dy[i];
      want_dx[i] = scale[j] / sigma * g;
      want_ds[j] += g * (x[i] - mean[j]) / sigma;
      want_dsh[j] += g;
    }
    CHECK(all_close(to_vec(tdx), want_dx, 1e-5, 1e-5));
    CHECK(all_close(to_vec(ds), want_ds, 1e-5, 1e-5));
    CHECK(all_close(to_vec(dsh), want_dsh, 1e-5, 1e-5));
  }
}

TEST_CASE("channel_moments: mean and variance of a large offset channel in double", "[backend]") {
  Backend& be = backend_for(Device::cpu());
  const int64_t positions = 20000, c = 3;
  Tensor x(Shape{positions, 1, 1, c}), mean(Shape{c}), var(Shape{c});
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t j = 0; j < c; ++j) x.data()[p * c + j] = static_cast<float>(1000.0 * j + (p % 2 ? 0.5 : -0.5));
  be.channel_moments(x, mean, var);
  for (int64_t j = 0; j < c; ++j) {
    CHECK(mean.data()[j] == Approx(1000.0 * j).margin(1e-6));
    CHECK(var.data()[j] == Approx(0.25).epsilon(1e-6));
  }
  Tensor empty(Shape{0, 1, 1, c});
  be.channel_moments(empty, mean, var);
  CHECK(mean.data()[1] == 0.f);
  CHECK(var.data()[1] == 0.f);
}

TEST_CASE("batch_norm_dx_correction: shapes that do not agree are one clear error", "[backend]") {
  Backend& be = backend_for(Device::cpu());
  const int64_t c = 3;
  Tensor x = Tensor::zeros(Shape{4, 1, 1, c}), dx = Tensor::zeros(Shape{4, 1, 1, c});
  Tensor stats = Tensor::zeros(Shape{c}), wrong = Tensor::zeros(Shape{c + 1});
  CHECK_NOTHROW(be.batch_norm_dx_correction(x, stats, stats, stats, 1e-5f, 4.0, stats, stats, dx));
  CHECK_THROWS_WITH(be.batch_norm_dx_correction(x, stats, stats, wrong, 1e-5f, 4.0, stats, stats, dx),
                    Catch::Contains("batch_norm_dx_correction: shapes do not agree (12 elements, 3 channels)"));
  Tensor short_dx = Tensor::zeros(Shape{3, 1, 1, c});
  CHECK_THROWS_WITH(be.batch_norm_dx_correction(x, stats, stats, stats, 1e-5f, 4.0, stats, stats, short_dx),
                    Catch::Contains("shapes do not agree"));
}
