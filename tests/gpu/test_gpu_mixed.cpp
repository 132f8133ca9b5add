// (d) Precision: mixed on the device under test: conv and fully connected with bf16 = true
// (bfloat16 operands, float32 sums and outputs) against the CPU's float32 ops on the same
// inputs, forward and both backward directions, within the stated mixed-precision tolerance;
// and a check that bf16 really ran (its results differ from float32).
// The bf16 conv op's kept operands (forward's rounded x, backward weights' rounded dy) in
// every call order, bit for bit against a fresh op.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "backend/backend_options.h"
#include "gpu/gpu_test_util.h"

namespace dlt::test::gpu {

namespace {

// bfloat16 keeps 8 significant bits (7 stored + the implicit one): each rounded operand is
// off by up to 2^-9 ~ 2e-3 relative, and the GPU also rounds conv's y / dx / dw to bfloat16
// before converting back. Over sums of many such products the errors mostly cancel, so the
// normwise relative error ||got - want||_2 / ||want||_2 stays at a few 1e-3; 1e-2 is the bar.
constexpr double kMixedTol = 1e-2;
// float32 against float32 agrees to ~1e-7; a bf16 result must differ by more than this.
constexpr double kBf16Differs = 1e-6;

// ||got - want||_2 / ||want||_2 (got may live on the device).
double rel2(const Tensor& got, const Tensor& want) {
  const Vec g = to_vec(got), w = to_vec(want);
  REQUIRE(g.size() == w.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    diff += (g[i] - w[i]) * (g[i] - w[i]);
    norm += w[i] * w[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

struct MixedErrors {
  double y = 0, dx = 0, dw = 0, db = 0;
};

ConvDesc conv_desc(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t kh, int64_t kw, int64_t stride,
                   int64_t pt, int64_t pb, int64_t pl, int64_t pr, bool relu, int64_t groups = 1) {
  ConvDesc d;
  d.n = n, d.h = h, d.w = w, d.c = c, d.k = k, d.kh = kh, d.kw = kw, d.groups = groups;
  d.stride_h = d.stride_w = stride;
  d.pad_t = pt, d.pad_b = pb, d.pad_l = pl, d.pad_r = pr;
  d.fuse_relu = relu;
  return d;
}

// Runs forward, backward_data and backward_weights of the device's op `dev` and the CPU's
// float32 op `ref` on the same random x, w, b, dy; returns the normwise errors of y, dx, dw, db.
template <class Op>
MixedErrors run_pair(Op& dev, Op& ref, const Shape& xs, const Shape& ws, int64_t k, const Shape& ys, uint64_t seed) {
  Rng rng(seed);
  auto x = random_pair(xs, rng), w = random_pair(ws, rng, -0.5f, 0.5f);
  auto b = random_pair(Shape{k}, rng), dy = random_pair(ys, rng);
  const Device dd = device_under_test();
  Tensor y_d(ys, dd), dx_d(xs, dd), dw_d(ws, dd), db_d(Shape{k}, dd);
  Tensor y_c(ys), dx_c(xs), dw_c(ws), db_c(Shape{k});
  dev.forward(x.dev, w.dev, b.dev, y_d);
  dev.backward_data(dy.dev, w.dev, dx_d);
  dev.backward_weights(x.dev, dy.dev, dw_d, db_d);
  dut_backend().synchronize();
  ref.forward(x.cpu, w.cpu, b.cpu, y_c);
  ref.backward_data(dy.cpu, w.cpu, dx_c);
  ref.backward_weights(x.cpu, dy.cpu, dw_c, db_c);
  return {rel2(y_d, y_c), rel2(dx_d, dx_c), rel2(dw_d, dw_c), rel2(db_d, db_c)};
}

MixedErrors conv_errors(ConvDesc d, uint64_t seed) {
  ConvDesc f = d;
  f.bf16 = false;
  d.bf16 = true;
  auto dev = dut_backend().make(d);
  auto ref = cpu_be().make(f);
  return run_pair(*dev, *ref, Shape{d.n, d.h, d.w, d.c}, Shape{d.k, d.kh, d.kw, d.group_c()}, d.k,
                  Shape{d.n, d.out_h(), d.out_w(), d.k}, seed);
}

MixedErrors fc_errors(FcDesc d, uint64_t seed) {
  FcDesc f = d;
  f.bf16 = false;
  d.bf16 = true;
  auto dev = dut_backend().make(d);
  auto ref = cpu_be().make(f);
  return run_pair(*dev, *ref, Shape{d.n, d.in}, Shape{d.out, d.in}, d.out, Shape{d.n, d.out}, seed);
}

void check_mixed(const std::string& name, const MixedErrors& e) {
  INFO(name << ": ||.||_2 relative error y " << e.y << ", dx " << e.dx << ", dw " << e.dw << ", db " << e.db
            << " (bound " << kMixedTol << ")");
  CHECK(e.y <= kMixedTol);
  CHECK(e.dx <= kMixedTol);
  CHECK(e.dw <= kMixedTol);
  // db: the CUDA op sums the float32 dy (~1e-7 expected); oneDNN's bf16 op (the device under
  // DLT_GPU_TEST_DEVICE=cpu) sums its bfloat16 copy of dy, so db gets the same bound.
  CHECK(e.db <= kMixedTol);
}

}  // namespace

TEST_CASE("gpu mixed precision: bf16 conv agrees with the CPU's float32 conv", "[gpu][mixed]") {
  struct Row {
    const char* name;
    ConvDesc d;
  };
  const Row rows[] = {
      {"3x3 stride 1 pad 1, 8 -> 16", conv_desc(2, 9, 9, 8, 16, 3, 3, 1, 1, 1, 1, 1, false)},
      {"3x3 stride 2 pad t0 b1 l0 r1 (asymmetric), relu", conv_desc(2, 10, 10, 5, 7, 3, 3, 2, 0, 1, 0, 1, true)},
      {"1x1, 32 -> 8", conv_desc(3, 6, 5, 32, 8, 1, 1, 1, 0, 0, 0, 0, false)},
      {"5x3 pad t2 b1 l1 r0 (asymmetric), 3 channels, relu", conv_desc(2, 11, 8, 3, 8, 5, 3, 1, 2, 1, 1, 0, true)},
      {"3x3 stride 2 pad 1, 16 -> 24, relu", conv_desc(2, 12, 12, 16, 24, 3, 3, 2, 1, 1, 1, 1, true)},
      {"depthwise 3x3 pad 1, 32 channels, relu", conv_desc(2, 9, 9, 32, 32, 3, 3, 1, 1, 1, 1, 1, true, 32)},
      {"3x3 stride 2 pad 1, 4 groups of 4 -> 6", conv_desc(2, 10, 10, 16, 24, 3, 3, 2, 1, 1, 1, 1, false, 4)},
  };
  uint64_t seed = 900;
  for (const Row& r : rows) check_mixed(std::string("conv ") + r.name, conv_errors(r.d, ++seed));
}

TEST_CASE("gpu mixed precision: bf16 fully connected agrees with the CPU's float32", "[gpu][mixed]") {
  FcDesc a;
  a.n = 4, a.in = 180, a.out = 10;
  check_mixed("fc 4 x 180 -> 10", fc_errors(a, 31));
  FcDesc b;
  b.n = 7, b.in = 1000, b.out = 33, b.fuse_relu = true;
  check_mixed("fc 7 x 1000 -> 33, relu", fc_errors(b, 32));
}

TEST_CASE("gpu mixed precision: bf16 really runs (results differ from float32)", "[gpu][mixed]") {
  const MixedErrors c = conv_errors(conv_desc(2, 9, 9, 8, 16, 3, 3, 1, 1, 1, 1, 1, false), 77);
  INFO("conv y " << c.y << ", dx " << c.dx << ", dw " << c.dw);
  CHECK(c.y > kBf16Differs);
  CHECK(c.dx > kBf16Differs);
  CHECK(c.dw > kBf16Differs);
  FcDesc d;
  d.n = 4, d.in = 180, d.out = 10;
  const MixedErrors f = fc_errors(d, 78);
  INFO("fc y " << f.y << ", dx " << f.dx << ", dw " << f.dw);
  CHECK(f.y > kBf16Differs);
  CHECK(f.dx > kBf16Differs);
  CHECK(f.dw > kBf16Differs);
}

TEST_CASE("gpu mixed precision: bf16 conv's kept x and dy give the same bits in any call order", "[gpu][mixed]") {
  // The CUDA op keeps forward's rounded x for backward weights, and backward weights' rounded dy
  // in the workspace for backward data (the layers' order). Every other order, another op using
  // the workspace in between, a second forward before backward and a second step must give the
  // bits of a fresh op that rounds everything itself. Deterministic: the same algorithms, each
  // reproducible bit for bit.
  Backend& be = dut_backend_with([](BackendOptions& o) { o.deterministic = true; });
  const Device dev = be.device();
  for (const ConvDesc& base : {conv_desc(16, 12, 12, 16, 24, 3, 3, 1, 1, 1, 1, 1, false),
                               conv_desc(8, 10, 10, 8, 16, 3, 3, 2, 0, 1, 0, 1, true)}) {
    ConvDesc d = base;
    d.bf16 = true;
    INFO("conv " << d.n << "x" << d.h << "x" << d.w << "x" << d.c << " -> " << d.k << ", padding t" << d.pad_t << " b"
                 << d.pad_b);
    const Shape xs{d.n, d.h, d.w, d.c}, ws{d.k, d.kh, d.kw, d.c}, ys{d.n, d.out_h(), d.out_w(), d.k}, bs{d.k};
    Rng rng(4242);
    auto x = random_pair(xs, rng), x2 = random_pair(xs, rng), w = random_pair(ws, rng, -0.5f, 0.5f);
    auto b = random_pair(bs, rng), dy = random_pair(ys, rng), dy2 = random_pair(ys, rng);
    struct Out {
      Vec y, dx, dw;
    };
    // order: "wd" backward weights then data (the layers'), "dw" data then weights; `between`
    // runs between the two backward calls; `before` between forward and the backward calls.
    auto step = [&](ConvOp& op, const Tensor& xin, const Tensor& g, const char* order,
                    const std::function<void()>& between, const std::function<void()>& before) {
      Tensor y(ys, dev), dx(xs, dev), dwt(ws, dev), db(bs, dev);
      op.forward(xin, w.dev, b.dev, y);
      if (before) before();
      if (order[0] == 'w') {
        op.backward_weights(xin, g, dwt, db);
        if (between) between();
        op.backward_data(g, w.dev, dx);
      } else {
        op.backward_data(g, w.dev, dx);
        if (between) between();
        op.backward_weights(xin, g, dwt, db);
      }
      be.synchronize();
      return Out{to_vec(y), to_vec(dx), to_vec(dwt)};
    };
    auto same = [](const Out& a, const Out& want, const char* what) {
      INFO(what);
      CHECK(a.y == want.y);
      CHECK(a.dx == want.dx);
      CHECK(a.dw == want.dw);
    };
    // Reference: fresh ops that keep nothing: y from one op's forward; dx and dw from another op
    // that never ran forward (it rounds x itself), data before weights (it rounds dy itself).
    auto reference = [&](const TensorPair& xin, const TensorPair& g) {
      auto fwd = be.make(d), bwd = be.make(d);
      Tensor y(ys, dev), dx(xs, dev), dwt(ws, dev), db(bs, dev);
      fwd->forward(xin.dev, w.dev, b.dev, y);
      bwd->backward_data(g.dev, w.dev, dx);
      bwd->backward_weights(xin.dev, g.dev, dwt, db);
      be.synchronize();
      return Out{to_vec(y), to_vec(dx), to_vec(dwt)};
    };
    const Out want = reference(x, dy), want2 = reference(x2, dy2);
    auto fresh = be.make(d);
    same(step(*fresh, x.dev, dy.dev, "dw", nullptr, nullptr), want, "data then weights (x kept from forward)");

    auto layer_order = be.make(d);
    same(step(*layer_order, x.dev, dy.dev, "wd", nullptr, nullptr), want, "weights then data (dy kept)");
    same(step(*layer_order, x2.dev, dy2.dev, "wd", nullptr, nullptr), want2, "the same op, a second step");

    // Another bfloat16 convolution takes the workspace between weights and data.
    ConvDesc other = d;
    other.k = d.k + 8;
    auto intruder = be.make(other);
    Tensor oy(Shape{other.n, other.out_h(), other.out_w(), other.k}, dev);
    Rng orng(7);
    auto ow = random_pair(Shape{other.k, other.kh, other.kw, other.c}, orng, -0.5f, 0.5f);
    auto ob = random_pair(Shape{other.k}, orng);
    auto interleaved = be.make(d);
    same(step(
             *interleaved, x.dev, dy.dev, "wd", [&] { intruder->forward(x2.dev, ow.dev, ob.dev, oy); }, nullptr),
         want, "another op between weights and data");

    // A forward of other values (a validation batch) last before the backward: the kept x is x2's,
    // so backward weights must round x itself.
    Tensor ty(ys, dev);
    auto stale = be.make(d);
    same(step(*stale, x.dev, dy.dev, "wd", nullptr, [&] { stale->forward(x2.dev, w.dev, b.dev, ty); }), want,
         "another forward (other x) before the backward");
    // A forward of other values (a validation batch) and then of x again before the backward.
    auto twice = be.make(d);
    same(step(*twice, x.dev, dy.dev, "wd", nullptr,
              [&] {
                twice->forward(x2.dev, w.dev, b.dev, ty);
                twice->forward(x.dev, w.dev, b.dev, ty);
              }),
         want, "two more forwards before the backward");
  }
}

}  // namespace dlt::test::gpu
