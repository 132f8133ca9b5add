// Agreement rows of the losses other than cross-entropy (Backend::loss_async and
// read_loss_totals, the training path): the mean loss, every metric sum of LossTotals and the
// gradient against the double references of support/reference_losses.h. Part of kernel_rows().
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/kernel_kinds.h"
#include "support/reference_losses.h"
#include "support/reference_ops.h"
#include "support/tensor_utils.h"

namespace dlt::test {
namespace agreement {

// Values rounded to float, as the tensors hold them (the reference then sees the same inputs).
inline Vec as_floats(Vec v) {
  for (double& x : v) x = static_cast<float>(x);
  return v;
}

inline Tensor label_tensor(const std::vector<int32_t>& labels, Device dev) {
  Tensor t(Shape{static_cast<int64_t>(labels.size())}, Device::cpu(), DType::kI32);
  for (size_t i = 0; i < labels.size(); ++i) t.data_i32()[i] = labels[i];
  return t.to(dev);
}

// The loss through loss_async and read_loss_totals; grad filled with 5 first (every value must
// be written).
inline LossTotals run_loss(Backend& be, const Tensor& outputs, const Tensor& targets, Tensor& grad,
                           const LossOptions& opt) {
  be.fill(grad, 5.f);
  Tensor totals(Shape{Backend::kLossTotalsFloats}, be.device());
  be.loss_async(outputs, targets, grad, totals, opt);
  return be.read_loss_totals(totals, targets);
}

inline void check_loss_totals(const LossTotals& got, const ref::LossResult& want, double tol) {
  CHECK(got.loss_sum == Approx(want.loss).epsilon(tol).margin(1e-12));
  CHECK(got.weight_sum == Approx(want.weight).epsilon(1e-6));
  CHECK(got.counted == static_cast<uint64_t>(want.counted));
  CHECK(got.correct == static_cast<uint64_t>(want.correct));
  CHECK(got.sq_sum == Approx(want.sq).epsilon(tol).margin(1e-12));
  CHECK(got.abs_sum == Approx(want.abs).epsilon(tol).margin(1e-12));
  CHECK(got.ape_sum == Approx(want.ape).epsilon(tol).margin(1e-12));
  CHECK(got.ape_count == static_cast<uint64_t>(want.ape_count));
  CHECK(got.tp == static_cast<uint64_t>(want.tp));
  CHECK(got.fp == static_cast<uint64_t>(want.fp));
  CHECK(got.fn == static_cast<uint64_t>(want.fn));
  CHECK(got.exact == static_cast<uint64_t>(want.exact));
  CHECK(got.first_bad == UINT64_MAX);
}

// mse, mae or huber on n rows of r responses; every 7th target 0 (left out of MAPE).
inline AgreementRow regression_loss_row(std::string name, LossKind kind, int64_t n, int64_t r, float delta = 1.f) {
  return {"regression_loss " + name, {RegressionLossKernel::kOp}, [=](Backend& be, double tol) {
            Rng rng(131);
            const Device dev = be.device();
            const Vec y = random_vec(n * r, rng, -2.0, 2.0);
            Vec t = random_vec(n * r, rng, -2.0, 2.0);
            for (size_t i = 0; i < t.size(); i += 7) t[i] = 0;
            LossOptions opt;
            opt.kind = kind, opt.images = n, opt.huber_delta = delta;
            Tensor ty = to_tensor(y, {n, r}, dev), tt = to_tensor(t, {n, r}, dev), grad(Shape{n, r}, dev);
            const LossTotals got = run_loss(be, ty, tt, grad, opt);
            const ref::LossResult want = ref::regression_loss(kind, n, y, t, delta);
            check_loss_totals(got, want, tol);
            CHECK(got.values == static_cast<uint64_t>(n * r));
            CHECK(got.classes == static_cast<uint64_t>(r));
            check_close("grad", grad, want.grad, tol);
          }};
}

// Sigmoid probabilities of logits in [-4, 4) against random 0/1 targets, n rows of c.
inline AgreementRow binary_cross_entropy_row(std::string name, int64_t n, int64_t c) {
  return {"binary_cross_entropy " + name, {BinaryCrossEntropyKernel::kOp}, [=](Backend& be, double tol) {
            Rng rng(137);
            const Device dev = be.device();
            Vec p = random_vec(n * c, rng, -4.0, 4.0), t(p.size());
            for (double& v : p) v = 1 / (1 + std::exp(-v));
            p = as_floats(p);
            for (double& v : t) v = static_cast<double>(rng.below(2));
            LossOptions opt;
            opt.kind = LossKind::kBinaryCrossEntropy, opt.images = n;
            Tensor tp = to_tensor(p, {n, c}, dev), tt = to_tensor(t, {n, c}, dev), grad(Shape{n, c}, dev);
            const LossTotals got = run_loss(be, tp, tt, grad, opt);
            const ref::LossResult want = ref::binary_cross_entropy(n, p, t);
            check_loss_totals(got, want, tol);
            CHECK(got.values == static_cast<uint64_t>(n * c));
            CHECK(got.classes == static_cast<uint64_t>(c));
            check_close("dlogits", grad, want.grad, tol);
          }};
}

// Random labels of c classes; undefined: about a quarter of them -1.
inline std::vector<int32_t> random_labels(int64_t rows, int64_t c, bool undefined, Rng& rng) {
  std::vector<int32_t> labels(static_cast<size_t>(rows));
  for (int32_t& l : labels) {
    l = static_cast<int32_t>(rng.below(static_cast<uint64_t>(c)));
    if (undefined && rng.below(4) == 0) l = -1;
  }
  return labels;
}

// Softmax probabilities of images x pixels rows of c classes and random labels; undefined:
// about a quarter of the labels -1 and the last image's all (an image that counts nowhere).
struct PixelCase {
  Vec probs;
  std::vector<int32_t> labels;
};
inline PixelCase pixel_case(int64_t images, int64_t pixels, int64_t c, bool undefined, uint64_t seed) {
  Rng rng(seed);
  const int64_t rows = images * pixels;
  PixelCase pc{as_floats(ref::softmax_forward(rows, c, random_vec(rows * c, rng, -3.0, 3.0))),
               random_labels(rows, c, undefined, rng)};
  if (undefined)
    for (int64_t i = (images - 1) * pixels; i < rows; ++i) pc.labels[static_cast<size_t>(i)] = -1;
  return pc;
}

inline AgreementRow generalized_dice_row(std::string name, int64_t images, int64_t pixels, int64_t c,
                                         bool undefined = false) {
  return {"generalized_dice " + name, {GeneralizedDiceKernel::kOp}, [=](Backend& be, double tol) {
            const Device dev = be.device();
            const auto [p, labels] = pixel_case(images, pixels, c, undefined, 139);
            LossOptions opt;
            opt.kind = LossKind::kGeneralizedDice, opt.images = images, opt.undefined_labels = undefined;
            Tensor tp = to_tensor(p, {images, pixels, 1, c}, dev), grad(tp.shape(), dev);
            const LossTotals got = run_loss(be, tp, label_tensor(labels, dev), grad, opt);
            const ref::LossResult want = ref::generalized_dice(images, c, p, labels);
            check_loss_totals(got, want, tol);
            CHECK(got.classes == static_cast<uint64_t>(c));
            check_close("dlogits", grad, want.grad, tol);
          }};
}

inline AgreementRow focal_cross_entropy_row(std::string name, int64_t n, int64_t c, float gamma, float alpha,
                                            bool weighted = false, bool undefined = false) {
  return {"focal_cross_entropy " + name, {FocalCrossEntropyKernel::kOp}, [=](Backend& be, double tol) {
            Rng rng(149);
            const Device dev = be.device();
            const Vec p = as_floats(ref::softmax_forward(n, c, random_vec(n * c, rng, -4.0, 4.0)));
            const std::vector<int32_t> labels = random_labels(n, c, undefined, rng);
            const Vec weights = weighted ? random_vec(c, rng, 0.2, 3.0) : Vec{};
            LossOptions opt;
            opt.kind = LossKind::kFocalCrossEntropy, opt.images = n, opt.undefined_labels = undefined;
            opt.focal_gamma = gamma, opt.focal_alpha = alpha;
            if (weighted) opt.class_weights = to_tensor(weights, {c}, dev);
            Tensor tp = to_tensor(p, {n, 1, 1, c}, dev), grad(tp.shape(), dev);
            const LossTotals got = run_loss(be, tp, label_tensor(labels, dev), grad, opt);
            const ref::LossResult want = ref::focal_cross_entropy(c, p, labels, gamma, alpha, weights);
            check_loss_totals(got, want, tol);
            CHECK(got.classes == static_cast<uint64_t>(c));
            check_close("dlogits", grad, want.grad, tol);
          }};
}

inline AgreementRow tversky_row(std::string name, int64_t images, int64_t pixels, int64_t c, float alpha, float beta,
                                bool undefined = false) {
  return {"tversky " + name, {TverskyKernel::kOp}, [=](Backend& be, double tol) {
            const Device dev = be.device();
            const auto [p, labels] = pixel_case(images, pixels, c, undefined, 151);
            LossOptions opt;
            opt.kind = LossKind::kTversky, opt.images = images, opt.undefined_labels = undefined;
            opt.tversky_alpha = alpha, opt.tversky_beta = beta;
            Tensor tp = to_tensor(p, {images, pixels, 1, c}, dev), grad(tp.shape(), dev);
            const LossTotals got = run_loss(be, tp, label_tensor(labels, dev), grad, opt);
            const ref::LossResult want = ref::tversky(images, c, p, labels, alpha, beta);
            check_loss_totals(got, want, tol);
            CHECK(got.classes == static_cast<uint64_t>(c));
            check_close("dlogits", grad, want.grad, tol);
          }};
}

inline std::vector<AgreementRow> loss_rows() {
  std::vector<AgreementRow> rows;
  rows.push_back(regression_loss_row("mse 10x3", LossKind::kMse, 10, 3));
  rows.push_back(regression_loss_row("mse 300x70 (parallel)", LossKind::kMse, 300, 70));
  rows.push_back(regression_loss_row("mae 33x1", LossKind::kMae, 33, 1));
  rows.push_back(regression_loss_row("mae 200x100 (parallel)", LossKind::kMae, 200, 100));
  rows.push_back(regression_loss_row("huber delta 1, 17x5", LossKind::kHuber, 17, 5));
  rows.push_back(regression_loss_row("huber delta 0.5, 300x70", LossKind::kHuber, 300, 70, 0.5f));
  rows.push_back(binary_cross_entropy_row("9x4", 9, 4));
  rows.push_back(binary_cross_entropy_row("2x1", 2, 1));
  rows.push_back(binary_cross_entropy_row("512x40 (parallel)", 512, 40));
  rows.push_back(generalized_dice_row("2 images of 5 pixels, 7 classes (some absent)", 2, 5, 7));
  rows.push_back(generalized_dice_row("3 images of 8x8, 4 classes, undefined", 3, 64, 4, true));
  rows.push_back(generalized_dice_row("1 image of 3 pixels, 2 classes", 1, 3, 2));
  rows.push_back(generalized_dice_row("4 images of 64x64, 5 classes, undefined (parallel)", 4, 4096, 5, true));
  rows.push_back(tversky_row("alpha 0.3 beta 0.7, 2 images of 5 pixels, 7 classes (some absent)", 2, 5, 7, 0.3f, 0.7f));
  rows.push_back(tversky_row("alpha 0.5 beta 0.5, 3 images of 8x8, 4 classes, undefined", 3, 64, 4, 0.5f, 0.5f, true));
  rows.push_back(tversky_row("alpha 0 beta 1, 1 image of 3 pixels, 2 classes", 1, 3, 2, 0.f, 1.f));
  rows.push_back(tversky_row("alpha 0.7 beta 0.3, 4 images of 64x64, 5 classes, undefined (parallel)", 4, 4096, 5, 0.7f,
                             0.3f, true));
  rows.push_back(focal_cross_entropy_row("100x10 gamma 2 alpha 0.25", 100, 10, 2.f, 0.25f));
  rows.push_back(focal_cross_entropy_row("weighted undefined 700x11", 700, 11, 2.f, 0.25f, true, true));
  rows.push_back(focal_cross_entropy_row("gamma 0 alpha 1 (cross-entropy) 50x6", 50, 6, 0.f, 1.f));
  rows.push_back(focal_cross_entropy_row("gamma 0.5 alpha 0.5, 5000x5 (parallel)", 5000, 5, 0.5f, 0.5f));
  return rows;
}

}  // namespace agreement
}  // namespace dlt::test
