// The argument checks of the op interfaces (backend/ops.cpp), written once for every backend,
// exercised through the CPU backend: a tensor of the wrong size or an undefined one is
// rejected with the op, the argument and the expected size; an optional bias or bias
// gradient is checked only when given. (The device check needs a second device: tests/gpu.)
#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.h"

namespace dlt::test {

using Catch::Contains;

TEST_CASE("conv op checks its arguments once for every backend", "[backend][cpu][op_checks]") {
  ConvDesc d;
  d.n = 2, d.h = d.w = 5, d.c = 3, d.k = 4, d.kh = d.kw = 3;  // y (2, 3, 3, 4)
  auto op = cpu_backend().make(d);
  Tensor x(Shape{2, 5, 5, 3}), w(Shape{4, 3, 3, 3}), b(Shape{4}), y(Shape{2, 3, 3, 4});
  Tensor short_x(Shape{2, 5, 5, 2}), short_b(Shape{3}), none;
  CHECK_NOTHROW(op->forward(x, w, b, y));
  CHECK_THROWS_WITH(op->forward(short_x, w, b, y),
                    Contains("conv forward: x has 100 elements, expected 150 (set up the op for this shape)"));
  CHECK_THROWS_WITH(op->forward(x, w, short_b, y), Contains("conv forward: b has 3 elements, expected 4"));
  CHECK_THROWS_WITH(op->forward(x, w, b, none), Contains("conv forward: y has 0 elements, expected 72"));
  CHECK_THROWS_WITH(op->forward(x, w, none, y), Contains("conv forward: b is undefined; the CPU backend needs a bias"));
  Tensor dy(Shape{2, 3, 3, 4}), dx(Shape{2, 5, 5, 3}), dw(Shape{4, 3, 3, 3}), db(Shape{4});
  CHECK_NOTHROW(op->backward_data(dy, w, dx));
  CHECK_THROWS_WITH(op->backward_data(dy, w, short_x), Contains("conv backward_data: dx has 100 elements"));
  CHECK_NOTHROW(op->backward_weights(x, dy, dw, db));
  CHECK_NOTHROW(op->backward_weights(x, dy, dw, none));  // db is optional
  CHECK_THROWS_WITH(op->backward_weights(x, dy, dw, short_b), Contains("conv backward_weights: db has 3 elements"));
}

TEST_CASE("transposed conv and fc ops check their arguments once", "[backend][cpu][op_checks]") {
  DeconvDesc dd;
  dd.n = 1, dd.h = dd.w = 2, dd.c = 3, dd.k = 2, dd.kh = dd.kw = 2, dd.stride_h = dd.stride_w = 2;  // y (1, 4, 4, 2)
  auto deconv = cpu_backend().make(dd);
  Tensor x(Shape{1, 2, 2, 3}), w(Shape{3, 2, 2, 2}), b(Shape{2}), y(Shape{1, 4, 4, 2}), none;
  CHECK_NOTHROW(deconv->forward(x, w, b, y));
  CHECK_THROWS_WITH(deconv->forward(x, Tensor(Shape{3}), b, y),
                    Contains("transposed conv forward: w has 3 elements, expected 24"));
  CHECK_THROWS_WITH(deconv->forward(x, w, none, y), Contains("transposed conv forward: b is undefined"));

  auto fc = cpu_backend().make(FcDesc{2, 6, 3});
  Tensor fx(Shape{2, 6}), fw(Shape{3, 6}), fb(Shape{3}), fy(Shape{2, 3}), five(Shape{5}), ten(Shape{2, 5}),
      four(Shape{4});
  CHECK_NOTHROW(fc->forward(fx, fw, fb, fy));
  CHECK_THROWS_WITH(fc->forward(fx, fw, fb, five), Contains("fc forward: y has 5 elements, expected 6"));
  CHECK_THROWS_WITH(fc->backward_data(fy, fw, ten), Contains("fc backward_data: dx has 10 elements, expected 12"));
  Tensor dw(Shape{3, 6});
  CHECK_THROWS_WITH(fc->backward_weights(fx, fy, dw, four),
                    Contains("fc backward_weights: db has 4 elements, expected 3"));
}

TEST_CASE("pool, lrn, activation and softmax ops check their arguments once", "[backend][cpu][op_checks]") {
  PoolDesc pd;
  pd.n = 1, pd.h = pd.w = 4, pd.c = 2, pd.kh = pd.kw = 2, pd.stride_h = pd.stride_w = 2;  // y (1, 2, 2, 2)
  auto pool = cpu_backend().make(pd);
  Tensor px(Shape{1, 4, 4, 2}), py(Shape{1, 2, 2, 2}), none;
  CHECK_NOTHROW(pool->forward(px, py, true));
  CHECK_THROWS_WITH(pool->forward(px, px, true), Contains("pool forward: y has 32 elements, expected 8"));
  CHECK_THROWS_WITH(pool->backward(none, px), Contains("pool backward: dy has 0 elements, expected 8"));

  LrnDesc ld;
  ld.n = 1, ld.h = ld.w = 2, ld.c = 5;
  auto lrn = cpu_backend().make(ld);
  Tensor lx(Shape{1, 2, 2, 5});
  CHECK_THROWS_WITH(lrn->backward(lx, Tensor(Shape{3}), lx), Contains("lrn backward: dy has 3 elements, expected 20"));

  auto act = cpu_backend().make(ActDesc{6, ActKind::kRelu, 0.f});
  Tensor ax(Shape{6});
  CHECK_NOTHROW(act->forward(ax, ax));
  CHECK_THROWS_WITH(act->backward(ax, ax, ax, none), Contains("activation backward: dx has 0 elements, expected 6"));

  auto softmax = cpu_backend().make(SoftmaxDesc{2, 3});
  Tensor sx(Shape{2, 3});
  CHECK_THROWS_WITH(softmax->forward(Tensor(Shape{2, 4}), sx),
                    Contains("softmax forward: x has 8 elements, expected 6"));
}

TEST_CASE("batch norm and concat ops check their arguments once", "[backend][cpu][op_checks]") {
  BatchNormDesc bd;
  bd.n = 2, bd.h = bd.w = 2, bd.c = 3;
  auto bn = cpu_backend().make(bd);
  Tensor x(Shape{2, 2, 2, 3}), y(Shape{2, 2, 2, 3}), dx(Shape{2, 2, 2, 3}), none;
  Tensor scale(Shape{3}), offset(Shape{3}), mean(Shape{3}), var(Shape{3}), dscale(Shape{3}), doffset(Shape{3});
  scale.data()[0] = scale.data()[1] = scale.data()[2] = 1.f;
  x.data()[0] = 1.f;
  CHECK_NOTHROW(bn->forward_training(x, scale, offset, y, mean, var));
  CHECK_THROWS_WITH(
      bn->forward_training(x, scale, Tensor(Shape{2}), y, mean, var),
      Contains("batch_norm forward_training: a (C) scale/offset/mean/var tensor has 2 elements, expected 3"));
  CHECK_THROWS_WITH(bn->forward_inference(x, scale, offset, mean, var, none),
                    Contains("batch_norm forward_inference: y has 0 elements, expected 24"));
  CHECK_NOTHROW(bn->backward(x, y, scale, mean, var, dx, dscale, doffset));
  CHECK_NOTHROW(bn->backward(x, y, scale, mean, var, dx, none, none));  // parameter gradients are optional
  Tensor short_dscale(Shape{4});
  CHECK_THROWS_WITH(bn->backward(x, y, scale, mean, var, dx, short_dscale, doffset),
                    Contains("batch_norm backward: a (C) scale/offset/mean/var tensor has 4 elements, expected 3"));

  CHECK_THROWS_WITH(cpu_backend().make(ConcatDesc{1, 2, 2, {}}), Contains("concat: no inputs"));
  auto concat = cpu_backend().make(ConcatDesc{1, 2, 2, {1, 2}});
  Tensor a(Shape{1, 2, 2, 1}), c(Shape{1, 2, 2, 2}), out(Shape{1, 2, 2, 3});
  CHECK_NOTHROW(concat->forward({&a, &c}, out));
  CHECK_THROWS_WITH(concat->forward({&a}, out), Contains("concat forward: 1 inputs, set up for 2"));
  CHECK_THROWS_WITH(concat->forward({&c, &a}, out), Contains("concat forward: an input has 8 elements, expected 4"));
  CHECK_NOTHROW(concat->backward(out, {nullptr, &c}));  // null gradients are skipped
  CHECK_THROWS_WITH(concat->backward(out, {&c, nullptr}), Contains("concat backward: a gradient has 8 elements"));
}

}  // namespace dlt::test
