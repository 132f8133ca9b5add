// Import's folding of constant tensors of any rank (lib/onnx/onnx_import_const.h): each operator
// on small tensors against values worked out by hand, the chains Swin's exporters write (its
// relative position bias gathered from the table, its shifted-window mask from ConstantOfShape,
// ScatterND, Sub, Equal, Not and Where), the refusals (indices out of range, shapes that do not
// broadcast, results too large), and a graph whose Gemm weights are computed from constants
// importing as the graph with those weights written out.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "onnx/onnx_import_const.h"
#include "onnx_test_graph.h"

namespace dlt::test {
namespace {

using onnxu::FoldError;
using onnxu::TensorConst;
using onnxu::TensorFoldAttrs;

TensorConst floats(std::vector<int64_t> dims, std::vector<double> v) {
  TensorConst t;
  t.dims = std::move(dims);
  t.v = std::move(v);
  return t;
}
TensorConst ints(std::vector<int64_t> dims, std::vector<double> v) {
  TensorConst t = floats(std::move(dims), std::move(v));
  t.type = TensorConst::kInt;
  return t;
}

TensorConst fold(const std::string& op, std::vector<const TensorConst*> in, const TensorFoldAttrs& a = {}) {
  return onnxu::tensor_fold(op, in, a, 17);
}

std::string refusal(const std::string& op, std::vector<const TensorConst*> in, const TensorFoldAttrs& a = {}) {
  try {
    fold(op, std::move(in), a);
  } catch (const FoldError& e) {
    return e.what();
  }
  return "";
}

// A graph whose weights are computed from constants gives the written-out graph's probabilities
// on two 1x4 images (the Gemm graphs below).
void same_as_written_out(const ModelData& folded, const ModelData& plain) {
  const std::vector<float> x{0.3f, -1.2f, 0.7f, 2.0f, -0.4f, 0.1f, 1.5f, -0.9f};
  const std::vector<float> p = probabilities(folded, x, 2), q = probabilities(plain, x, 2);
  REQUIRE(p.size() == q.size());
  for (size_t i = 0; i < p.size(); ++i) CHECK(p[i] == Approx(q[i]).margin(1e-6));
  CHECK(std::fabs(q[0] - q[3]) > 1e-3);  // the two images are told apart
}

}  // namespace

TEST_CASE("constant folding: elementwise operators broadcast as numpy does", "[onnx]") {
  const TensorConst a = floats({2, 3}, {1, 2, 3, 4, 5, 6}), row = floats({3}, {10, 20, 30}),
                    col = floats({2, 1}, {-1, 1});
  TensorConst s = fold("Add", {&a, &row});
  CHECK(s.dims == std::vector<int64_t>{2, 3});
  CHECK(s.v == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(fold("Mul", {&a, &col}).v == std::vector<double>{-1, -2, -3, 4, 5, 6});
  CHECK(fold("Sub", {&col, &row}).v == std::vector<double>{-11, -21, -31, -9, -19, -29});
  const TensorConst seven = ints({}, {7}), two = ints({}, {-2});
  const TensorConst q = fold("Div", {&seven, &two});
  CHECK(q.type == TensorConst::kInt);
  CHECK(q.v == std::vector<double>{-3});  // truncated toward zero
  const TensorConst e = fold("Equal", {&a, &row});
  CHECK(e.type == TensorConst::kBool);
  CHECK(e.v == std::vector<double>{0, 0, 0, 0, 0, 0});
  CHECK(fold("Not", {&e}).v == std::vector<double>{1, 1, 1, 1, 1, 1});
  const TensorConst cond = ints({2, 1}, {1, 0});
  TensorConst w = fold("Where", {&cond, &a, &row});
  CHECK(w.v == std::vector<double>{1, 2, 3, 10, 20, 30});
  CHECK(fold("Sigmoid", {&col}).v[1] == Approx(1 / (1 + std::exp(-1.0))));
  CHECK(fold("Relu", {&col}).v == std::vector<double>{0, 1});
  const TensorConst b3 = floats({4}, {1, 2, 3, 4});
  CHECK_THAT(refusal("Add", {&a, &b3}), Catch::Contains("shapes 2x3 and 4 do not broadcast"));
}

TEST_CASE("constant folding: Gather, Reshape, Transpose, Unsqueeze, Squeeze, Concat, Slice, Expand, Flatten",
          "[onnx]") {
  const TensorConst table = floats({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  const TensorConst idx = ints({2, 2}, {3, 0, -1, 2});
  TensorConst g = fold("Gather", {&table, &idx});
  CHECK(g.dims == std::vector<int64_t>{2, 2, 2});
  CHECK(g.v == std::vector<double>{30, 31, 0, 1, 30, 31, 20, 21});
  TensorFoldAttrs axis1;
  axis1.axis = 1;
  const TensorConst one = ints({}, {1});
  TensorConst g1 = fold("Gather", {&table, &one}, axis1);
  CHECK(g1.dims == std::vector<int64_t>{4});
  CHECK(g1.v == std::vector<double>{1, 11, 21, 31});
  const TensorConst bad = ints({1}, {4});
  CHECK_THAT(refusal("Gather", {&table, &bad}), Catch::Contains("index 4 is out of range for a dimension of 4"));

  const TensorConst shape = ints({3}, {2, -1, 2});
  TensorConst r = fold("Reshape", {&table, &shape});
  CHECK(r.dims == std::vector<int64_t>{2, 2, 2});
  const TensorConst zero_shape = ints({2}, {0, -1});
  CHECK(fold("Reshape", {&table, &zero_shape}).dims == std::vector<int64_t>{4, 2});
  const TensorConst wrong = ints({2}, {3, 3});
  CHECK_THAT(refusal("Reshape", {&table, &wrong}), Catch::Contains("reshapes 4x2 to 3x3"));

  TensorFoldAttrs perm;
  perm.perm = {2, 0, 1};
  TensorConst t = fold("Transpose", {&r}, perm);
  CHECK(t.dims == std::vector<int64_t>{2, 2, 2});
  // r[i][j][k] = table[(2i + j)][k]; t[k][i][j] = r[i][j][k]
  CHECK(t.v == std::vector<double>{0, 10, 20, 30, 1, 11, 21, 31});

  const TensorConst axes0 = ints({1}, {0});
  TensorConst u = fold("Unsqueeze", {&table, &axes0});
  CHECK(u.dims == std::vector<int64_t>{1, 4, 2});
  CHECK(fold("Squeeze", {&u, &axes0}).dims == std::vector<int64_t>{4, 2});
  CHECK(fold("Squeeze", {&u}).dims == std::vector<int64_t>{4, 2});

  TensorFoldAttrs cat;
  cat.axis = 1;
  TensorConst c = fold("Concat", {&table, &table}, cat);
  CHECK(c.dims == std::vector<int64_t>{4, 4});
  CHECK(c.v[4] == 10);
  CHECK(c.v[7] == 11);

  // Slice rows 3, 1 (start -1, end -5 clamped to -1, step -2) and column 1.
  const TensorConst st = ints({2}, {-1, 1}), en = ints({2}, {-5, 2}), ax = ints({2}, {0, 1}), sp = ints({2}, {-2, 1});
  TensorConst sl = fold("Slice", {&table, &st, &en, &ax, &sp});
  CHECK(sl.dims == std::vector<int64_t>{2, 1});
  CHECK(sl.v == std::vector<double>{31, 11});

  const TensorConst col = floats({2, 1}, {1, 2}), to = ints({3}, {3, 2, 4});
  TensorConst x = fold("Expand", {&col, &to});
  CHECK(x.dims == std::vector<int64_t>{3, 2, 4});
  CHECK(x.v[5] == 2);

  // Flatten (DINOv3's rotary coordinates (H, W, 2) to (H W, 2)): the values in order, the
  // dimensions before axis (default 1) and from it multiplied; axis 0 and a negative one.
  TensorConst f = fold("Flatten", {&x});
  CHECK(f.dims == std::vector<int64_t>{3, 8});
  CHECK(f.v == x.v);
  TensorFoldAttrs flat;
  flat.flatten_axis = 0;
  CHECK(fold("Flatten", {&x}, flat).dims == std::vector<int64_t>{1, 24});
  flat.flatten_axis = -1;
  CHECK(fold("Flatten", {&x}, flat).dims == std::vector<int64_t>{6, 4});
  flat.flatten_axis = 4;
  CHECK_THAT(refusal("Flatten", {&x}, flat), Catch::Contains("a Flatten of axis 4 of rank 3"));
}

TEST_CASE("constant folding: ConstantOfShape, Range, ScatterND, ScatterElements, GatherND, MatMul, Cast, Clip",
          "[onnx]") {
  const TensorConst shape = ints({2}, {2, 3});
  TensorConst z = fold("ConstantOfShape", {&shape});
  CHECK(z.dims == std::vector<int64_t>{2, 3});
  CHECK(z.v == std::vector<double>(6, 0.0));
  const TensorConst start = ints({}, {2}), limit = ints({}, {9}), delta = ints({}, {3});
  TensorConst rg = fold("Range", {&start, &limit, &delta});
  CHECK(rg.type == TensorConst::kInt);
  CHECK(rg.v == std::vector<double>{2, 5, 8});
  // ScatterND: rows 1 and 0 of a 2x3 zero tensor replaced.
  const TensorConst idx = ints({2, 1}, {1, 0}), upd = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  TensorConst sc = fold("ScatterND", {&z, &idx, &upd});
  CHECK(sc.v == std::vector<double>{4, 5, 6, 1, 2, 3});
  const TensorConst cell = ints({1, 2}, {0, 2}), val = floats({1}, {-7});
  CHECK(fold("ScatterND", {&sc, &cell, &val}).v == std::vector<double>{4, 5, -7, 1, 2, 3});
  const TensorConst pick = ints({2, 2}, {1, 2, 0, 0});  // GatherND: cells (1, 2) and (0, 0)
  CHECK(fold("GatherND", {&sc, &pick}).v == std::vector<double>{3, 4});
  const TensorConst rows = ints({1, 1}, {1});
  TensorConst row = fold("GatherND", {&sc, &rows});
  CHECK(row.dims == std::vector<int64_t>{1, 3});
  CHECK(row.v == std::vector<double>{1, 2, 3});
  const TensorConst far = ints({1, 2}, {2, 0});
  CHECK_THAT(refusal("ScatterND", {&sc, &far, &val}), Catch::Contains("index 2 is out of range"));
  // ScatterElements along axis 1 (ConViT's offsets table, x[:, :, 2] = ...): out[i][idx[i][j]] =
  // upd[i][j], index -1 the last column; along axis 0 with add.
  TensorFoldAttrs cols;
  cols.axis = 1;
  const TensorConst eidx = ints({2, 2}, {2, 0, -1, 1}), eupd = floats({2, 2}, {7, 8, 9, 10});
  CHECK(fold("ScatterElements", {&sc, &eidx, &eupd}, cols).v == std::vector<double>{8, 5, 7, 1, 10, 9});
  TensorFoldAttrs rows_add;
  rows_add.reduction = "add";
  const TensorConst ridx = ints({1, 3}, {1, 0, 1}), rupd = floats({1, 3}, {100, 200, 300});
  CHECK(fold("ScatterElements", {&sc, &ridx, &rupd}, rows_add).v == std::vector<double>{4, 205, 6, 101, 2, 303});
  const TensorConst eout = ints({2, 2}, {3, 0, 0, 0});
  CHECK_THAT(refusal("ScatterElements", {&sc, &eout, &eupd}, cols), Catch::Contains("index 3 is out of range"));
  // MatMul: (2, 2, 3) x (3, 2), a batch of two.
  const TensorConst a = floats({2, 2, 3}, {1, 0, 0, 0, 1, 0, 1, 1, 1, 2, 0, -1}),
                    b = floats({3, 2}, {1, 2, 3, 4, 5, 6});
  TensorConst m = fold("MatMul", {&a, &b});
  CHECK(m.dims == std::vector<int64_t>{2, 2, 2});
  CHECK(m.v == std::vector<double>{1, 2, 3, 4, 9, 12, -3, -2});
  const TensorConst v = floats({2}, {1, -1});  // a vector: its axis removed again
  TensorConst bv = fold("MatMul", {&b, &v});
  CHECK(bv.dims == std::vector<int64_t>{3});
  CHECK(bv.v == std::vector<double>{-1, -1, -1});
  TensorFoldAttrs to_int;
  to_int.to = 7;
  const TensorConst f = floats({2}, {2.7, -2.7});
  TensorConst ci = fold("Cast", {&f}, to_int);
  CHECK(ci.type == TensorConst::kInt);
  CHECK(ci.v == std::vector<double>{2, -2});
  const TensorConst huge = ints({2}, {1 << 13, 1 << 12});
  CHECK_THAT(refusal("ConstantOfShape", {&huge}), Catch::Contains("more than the 16777216"));
  // Clip: Swin V2's clamp(logit_scale, max=log(100)), min absent; both bounds; a bound not scalar.
  const TensorConst logit = floats({3, 1, 1}, {2.3, 4.0, 5.0}), cap = floats({}, {std::log(100.0)});
  CHECK(fold("Clip", {&logit, nullptr, &cap}).v == std::vector<double>{2.3, 4.0, std::log(100.0)});
  const TensorConst lo = floats({}, {2.5});
  CHECK(fold("Clip", {&logit, &lo, &cap}).v == std::vector<double>{2.5, 4.0, std::log(100.0)});
  CHECK(fold("Clip", {&logit}).v == logit.v);
  CHECK_THAT(refusal("Clip", {&logit, &b}), Catch::Contains("a Clip bound of 3x2; expected one value"));
}

TEST_CASE("constant folding: Einsum of constants (timm's MaxViT bias), against loops", "[onnx]") {
  TensorFoldAttrs a;
  // "ij,jk->ik": a matrix product
  const TensorConst m = floats({2, 3}, {1, 2, 3, 4, 5, 6}), k = floats({3, 2}, {1, 0, -1, 2, 0.5, 1});
  a.equation = "ij,jk->ik";
  CHECK(fold("Einsum", {&m, &k}, a).v == std::vector<double>{0.5, 7, 2, 16});
  // timm's RelPosBiasTf: "nixw,jyw->nijxy" (spaces as MaxViT writes them elsewhere)
  const int64_t N = 2, I = 3, X = 2, W = 4, J = 2, Y = 3;
  std::vector<double> p(static_cast<size_t>(N * I * X * W)), q(static_cast<size_t>(J * Y * W));
  for (size_t i = 0; i < p.size(); ++i) p[i] = std::sin(0.7 * static_cast<double>(i));
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::cos(0.3 * static_cast<double>(i));
  const TensorConst tp = floats({N, I, X, W}, p), tq = floats({J, Y, W}, q);
  a.equation = "nixw, jyw -> nijxy";
  const TensorConst r = fold("Einsum", {&tp, &tq}, a);
  CHECK(r.dims == std::vector<int64_t>{N, I, J, X, Y});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < I; ++i)
      for (int64_t j = 0; j < J; ++j)
        for (int64_t x = 0; x < X; ++x)
          for (int64_t y = 0; y < Y; ++y) {
            double want = 0;
            for (int64_t w = 0; w < W; ++w)
              want += p[static_cast<size_t>(((n * I + i) * X + x) * W + w)] * q[static_cast<size_t>((j * Y + y) * W + w)];
            CHECK(r.v[static_cast<size_t>((((n * I + i) * J + j) * X + x) * Y + y)] == Approx(want).margin(1e-12));
          }
  // the refusals
  a.equation = "...ij,jk->...ik";
  CHECK_THAT(refusal("Einsum", {&m, &k}, a), Catch::Contains("without ellipsis"));
  a.equation = "ij,ik->jk";  // i is 2 in m and 3 in k
  CHECK_THAT(refusal("Einsum", {&m, &k}, a), Catch::Contains("whose 'i' has two sizes"));
  a.equation = "ijk,jk->ik";
  CHECK_THAT(refusal("Einsum", {&m, &k}, a), Catch::Contains("an Einsum term 'ijk' for an operand of 2x3"));
}

TEST_CASE("constant folding: Gemm of constants (a position MLP on its coordinates), against hand values", "[onnx]") {
  TensorFoldAttrs a;
  const TensorConst x = floats({2, 3}, {1, 2, 3, 4, 5, 6}), w = floats({2, 3}, {1, 0, -1, 0.5, 1, 0}),
                    c = floats({2}, {10, 20});
  // alpha x w^T + beta c: rows (1 - 3, 0.5 + 2) and (4 - 6, 2 + 5), times 2, plus 0.5 (10, 20)
  a.trans_b = 1;
  a.alpha = 2;
  a.beta = 0.5;
  TensorConst y = fold("Gemm", {&x, &w, &c}, a);
  CHECK(y.dims == std::vector<int64_t>{2, 2});
  CHECK(y.v == std::vector<double>{1, 15, 1, 24});
  // transA: x^T (3, 2) times a (2, 1) column, no C
  TensorFoldAttrs t;
  t.trans_a = 1;
  const TensorConst col = floats({2, 1}, {1, -1});
  y = fold("Gemm", {&x, &col}, t);
  CHECK(y.dims == std::vector<int64_t>{3, 1});
  CHECK(y.v == std::vector<double>{-3, -3, -3});
  const TensorConst v3 = floats({3}, {1, 2, 3});
  CHECK_THAT(refusal("Gemm", {&v3, &w}, t), Catch::Contains("a Gemm of 3 and 2x3"));
}

TEST_CASE("constant folding: Sin, Cos, Tile, CumSum and Conv (the Fourier position encodings of XCiT, EdgeNeXt)",
          "[onnx]") {
  const TensorConst x = floats({2}, {0.5, -1.25});
  CHECK(fold("Sin", {&x}).v ==
        std::vector<double>{static_cast<float>(std::sin(0.5)), static_cast<float>(std::sin(-1.25))});
  CHECK(fold("Cos", {&x}).v ==
        std::vector<double>{static_cast<float>(std::cos(0.5)), static_cast<float>(std::cos(-1.25))});
  // Tile (2, 3) by (2, 1): the rows twice
  const TensorConst m = ints({2, 3}, {1, 2, 3, 4, 5, 6}), reps = ints({2}, {2, 1});
  TensorConst y = fold("Tile", {&m, &reps});
  CHECK(y.dims == std::vector<int64_t>{4, 3});
  CHECK(y.v == std::vector<double>{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  const TensorConst reps3 = ints({3}, {1, 1, 1});
  CHECK_THAT(refusal("Tile", {&m, &reps3}), Catch::Contains("repeats 1x1x1 for a constant of rank 2"));
  // CumSum along axis 1, inclusive, exclusive, reversed
  const TensorConst axis = ints({}, {1});
  y = fold("CumSum", {&m, &axis});
  CHECK(y.v == std::vector<double>{1, 3, 6, 4, 9, 15});
  TensorFoldAttrs ex;
  ex.exclusive = 1;
  CHECK(fold("CumSum", {&m, &axis}, ex).v == std::vector<double>{0, 1, 3, 0, 4, 9});
  TensorFoldAttrs rev;
  rev.reverse = 1;
  CHECK(fold("CumSum", {&m, &axis}, rev).v == std::vector<double>{6, 5, 3, 15, 11, 6});
  const TensorConst axis0 = ints({}, {0});
  CHECK(fold("CumSum", {&m, &axis0}).v == std::vector<double>{1, 2, 3, 5, 7, 9});
  // Conv: a (1, 2, 3, 3) image, 2 filters of 2x2 over both channels, stride 1, no padding, a bias
  std::vector<double> img;
  for (int i = 0; i < 18; ++i) img.push_back(i);
  const TensorConst im = floats({1, 2, 3, 3}, img);
  const TensorConst w = floats({2, 2, 2, 2}, {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1});
  const TensorConst b = floats({2}, {0.5, -1});
  y = fold("Conv", {&im, &w, &b});
  CHECK(y.dims == std::vector<int64_t>{1, 2, 2, 2});
  // filter 0: channel 0's top-left pixel + 0.5; filter 1: channel 0's bottom-right + channel 1's
  // bottom-right - 1
  CHECK(y.v == std::vector<double>{0.5, 1.5, 3.5, 4.5, 4 + 13 - 1, 5 + 14 - 1, 7 + 16 - 1, 8 + 17 - 1});
  // depthwise (group 2) 1x1 filters, stride 2, padding 1: the corners and the zero border
  TensorFoldAttrs dw;
  dw.group = 2;
  dw.strides = {2, 2};
  dw.pads = {1, 1, 1, 1};
  const TensorConst w1 = floats({2, 1, 1, 1}, {2, -1});
  y = fold("Conv", {&im, &w1}, dw);
  CHECK(y.dims == std::vector<int64_t>{1, 2, 3, 3});
  CHECK(y.v == std::vector<double>{0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, -13, 0, 0, 0, 0});
  const TensorConst w3 = floats({2, 3, 1, 1}, {1, 1, 1, 1, 1, 1});
  CHECK_THAT(refusal("Conv", {&im, &w3}), Catch::Contains("a Conv of 1x2x3x3 by 2x3x1x1 in 1 groups"));
}

TEST_CASE("constant folding: hostile sizes are refused before anything is allocated", "[onnx]") {
  const TensorConst one = floats({1}, {1});
  const TensorConst far = ints({2}, {int64_t{1} << 40, int64_t{1} << 40});
  CHECK_THAT(refusal("Reshape", {&one, &far}), Catch::Contains("a target of more values than the tensor"));
  CHECK_THAT(refusal("Expand", {&one, &far}), Catch::Contains("more than the 16777216"));
  std::vector<double> axes;
  for (int i = 0; i < 20; ++i) axes.push_back(i);
  const TensorConst many = ints({20}, axes);
  CHECK_THAT(refusal("Unsqueeze", {&one, &many}), Catch::Contains("a result of rank 21"));
  // (2048 x 2048) x (2048 x 2048): 8.6e9 multiply-adds.
  TensorConst a = floats({2048, 2048}, std::vector<double>(2048 * 2048, 1.0));
  CHECK_THAT(refusal("MatMul", {&a, &a}), Catch::Contains("a product of more than 1073741824 multiply-adds"));
  const TensorConst start = floats({}, {0}), limit = floats({}, {1e12}), step = floats({}, {1});
  CHECK_THAT(refusal("Range", {&start, &limit, &step}), Catch::Contains("a range of more than 16777216 values"));
  const TensorConst zero = ints({}, {0});
  CHECK_THAT(refusal("Div", {&zero, &zero}), Catch::Contains("divides an integer by 0"));
}

// Swin's shifted-window mask for a 4x4 image, 2x2 windows shifted by 1, as torchvision computes
// it and the dynamo exporter writes it: region labels by ScatterND, per window the labels' pairwise
// differences, -100 where they differ.
TEST_CASE("constant folding: Swin's shifted-window mask and its relative position bias", "[onnx]") {
  // Labels of the 4x4 padded image: rows 0-1 / 2 / 3 and columns likewise: label 3 * rh + rw.
  const TensorConst shape = ints({2}, {4, 4});
  TensorConst labels = fold("ConstantOfShape", {&shape});
  std::vector<double> cells, values;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) {
      cells.push_back(y), cells.push_back(x);
      const int rh = y < 2 ? 0 : y < 3 ? 1 : 2, rw = x < 2 ? 0 : x < 3 ? 1 : 2;
      values.push_back(3 * rh + rw);
    }
  const TensorConst idx = ints({16, 2}, cells), upd = floats({16}, values);
  labels = fold("ScatterND", {&labels, &idx, &upd});
  // Windows: (2, 2, 2, 2) -> permute (0, 2, 1, 3) -> (4 windows, 4 tokens).
  const TensorConst s4 = ints({4}, {2, 2, 2, 2}), s2 = ints({2}, {4, 4});
  TensorFoldAttrs perm;
  perm.perm = {0, 2, 1, 3};
  TensorConst r1 = fold("Reshape", {&labels, &s4});
  TensorConst r2 = fold("Transpose", {&r1}, perm);
  TensorConst win = fold("Reshape", {&r2, &s2});
  const TensorConst ax1 = ints({1}, {1}), ax2 = ints({1}, {2});
  TensorConst a = fold("Unsqueeze", {&win, &ax1}), b = fold("Unsqueeze", {&win, &ax2});
  TensorConst diff = fold("Sub", {&a, &b});
  CHECK(diff.dims == std::vector<int64_t>{4, 4, 4});
  const TensorConst zero = floats({}, {0}), minus100 = floats({}, {-100});
  TensorConst eq = fold("Equal", {&diff, &zero});
  TensorConst ne = fold("Not", {&eq});
  TensorConst mask = fold("Where", {&ne, &minus100, &zero});
  // The last window (rows 2-3, columns 2-3) holds labels 4, 5, 7, 8: every pair of different
  // tokens is masked; the first (rows 0-1, columns 0-1) holds 0 everywhere: nothing masked.
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      CHECK(mask.v[static_cast<size_t>(i * 4 + j)] == 0);
      CHECK(mask.v[static_cast<size_t>(48 + i * 4 + j)] == (i == j ? 0 : -100));
    }
  // The relative position bias of a 2x2 window, 2 heads: a (9, 2) table gathered by the (4x4)
  // index (dy + 1) * 3 + dx + 1, viewed (4, 4, 2), permuted to (2, 4, 4), unsqueezed.
  std::vector<double> tv(18), iv;
  for (size_t i = 0; i < tv.size(); ++i) tv[i] = 0.5 * static_cast<double>(i);
  const TensorConst table = floats({9, 2}, tv);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) iv.push_back((i / 2 - j / 2 + 1) * 3 + (i % 2 - j % 2 + 1));
  const TensorConst index = ints({16}, iv), s3 = ints({3}, {4, 4, -1}), ax0 = ints({1}, {0});
  TensorFoldAttrs p3;
  p3.perm = {2, 0, 1};
  TensorConst g = fold("Gather", {&table, &index});
  TensorConst v3 = fold("Reshape", {&g, &s3});
  TensorConst pb = fold("Transpose", {&v3}, p3);
  TensorConst bias = fold("Unsqueeze", {&pb, &ax0});
  CHECK(bias.dims == std::vector<int64_t>{1, 2, 4, 4});
  // head 1, query 3 (1, 1), key 0 (0, 0): dy = dx = 1: row 8, column 1.
  CHECK(bias.v[static_cast<size_t>(16 + 3 * 4 + 0)] == tv[8 * 2 + 1]);
}

// Found by fuzz_onnx_import: the Expand of a float constant to a shape of ~2^62 values overflowed
// the product of its sizes; now one error line, from the tensor folder.
TEST_CASE("constant folding: an Expand of a constant to an absurd shape is one error line", "[onnx]") {
  // (1, 4) to (2^40, 4); (1, 1) to (2^52, 2^52), whose size overflows int64.
  for (const auto& [w, to] : {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{1, 4}, {int64_t{1} << 40, 4}},
                              {{1, 1}, {int64_t{1} << 52, int64_t{1} << 52}}}) {
    OnnxBuilder g({1, 4, 1, 1});
    g.node("Flatten", {"x"}, {"f"});
    g.floats("w", w, std::vector<float>(static_cast<size_t>(w[0] * w[1]), 0.25f));
    g.ints("to", {2}, to);
    g.node("Expand", {"w", "to"}, {"W"}, "expand");
    g.floats("B", {1}, {0.f});
    OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"g"}), "transB", 1);
    g.node("Softmax", {"g"}, {"prob"});
    g.output("prob");
    const std::string e = import_error(g);
    CHECK_THAT(e, Catch::Contains("node 'expand' (Expand): folding its constant inputs: a result of"));
    CHECK_THAT(e, Catch::Contains("more than the 16777216"));
    CHECK(e.find('\n') == std::string::npos);
  }
}

TEST_CASE("constant folding: a graph whose Gemm weights are computed imports as the written-out one", "[onnx]") {
  // W (3, 4) = Transpose(Reshape(Gather(T (6, 2), idx (6)), (4, 3))); B = Relu(b0 - 0.1).
  std::vector<float> t(12);
  for (size_t i = 0; i < t.size(); ++i) t[i] = 0.3f * std::sin(1.7f * static_cast<float>(i));
  const std::vector<int64_t> idx{5, 0, 3, 3, 1, 2};
  std::vector<float> w(12);  // written out: w[k][c] = gathered[c * 3 + k]
  std::vector<float> gathered;
  for (int64_t r : idx)
    gathered.push_back(t[static_cast<size_t>(r * 2)]), gathered.push_back(t[static_cast<size_t>(r * 2 + 1)]);
  for (int k = 0; k < 3; ++k)
    for (int c = 0; c < 4; ++c) w[static_cast<size_t>(k * 4 + c)] = gathered[static_cast<size_t>(c * 3 + k)];
  const std::vector<float> b0{0.5f, -0.2f, 0.15f}, b{0.4f, 0.f, 0.05f};
  auto graph = [&](bool computed) {
    OnnxBuilder g({1, 4, 1, 1});
    g.node("Flatten", {"x"}, {"f"});
    if (computed) {
      g.floats("T", {6, 2}, t);
      g.ints("idx", {6}, idx);
      g.ints("shape", {2}, {4, 3});
      g.node("Gather", {"T", "idx"}, {"gathered"});
      g.node("Reshape", {"gathered", "shape"}, {"w43"});
      OnnxBuilder::attr(g.node("Transpose", {"w43"}, {"W"}), "perm", std::vector<int64_t>{1, 0});
      g.floats("b0", {3}, b0);
      g.floats("tenth", {}, {0.1f});
      g.node("Sub", {"b0", "tenth"}, {"b1"});
      g.node("Relu", {"b1"}, {"B"});
    } else {
      g.floats("W", {3, 4}, w);
      g.floats("B", {3}, b);
    }
    OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"g"}), "transB", 1);
    g.node("Softmax", {"g"}, {"prob"});
    g.output("prob");
    return g;
  };
  same_as_written_out(imported(graph(true)), imported(graph(false)));
}

TEST_CASE("constant folding: an index list longer than a shape folds as a tensor (timm's swin_s3 bias)", "[onnx]") {
  // W (3, 4) = Reshape(Slice(GatherND(T (100), Unsqueeze(Reshape(idx (10, 10), [-1]), [-1])), 0, 12), (3, 4)):
  // the flattened index is a list of 100 integers, longer than any shape, folded with the tensors.
  std::vector<float> t(100);
  for (size_t i = 0; i < t.size(); ++i) t[i] = 0.3f * std::sin(1.3f * static_cast<float>(i));
  std::vector<int64_t> idx(100);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>((i * 37 + 11) % 100);
  std::vector<float> w(12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = t[static_cast<size_t>(idx[i])];
  auto graph = [&](bool computed) {
    OnnxBuilder g({1, 4, 1, 1});
    g.node("Flatten", {"x"}, {"f"});
    if (computed) {
      g.floats("T", {100}, t);
      g.ints("idx", {10, 10}, idx);
      g.ints("flat", {1}, {-1});
      g.ints("last", {1}, {-1});
      g.ints("zero", {1}, {0});
      g.ints("twelve", {1}, {12});
      g.ints("shape", {2}, {3, 4});
      g.node("Reshape", {"idx", "flat"}, {"idx_flat"});
      g.node("Unsqueeze", {"idx_flat", "last"}, {"idx_col"});
      g.node("GatherND", {"T", "idx_col"}, {"gathered"});
      g.node("Slice", {"gathered", "zero", "twelve"}, {"first"});
      g.node("Reshape", {"first", "shape"}, {"W"});
    } else {
      g.floats("W", {3, 4}, w);
    }
    g.floats("B", {3}, {0.1f, -0.2f, 0.05f});
    OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"g"}), "transB", 1);
    g.node("Softmax", {"g"}, {"prob"});
    g.output("prob");
    return g;
  };
  same_as_written_out(imported(graph(true)), imported(graph(false)));
}

}  // namespace dlt::test
