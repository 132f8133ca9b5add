// CpuBackend's losses other than cross-entropy (Backend::loss in backend.h states the formulas):
// mean squared / absolute / Huber error on float targets, binary cross-entropy on sigmoid
// probabilities, generalized Dice, Tversky and focal cross-entropy on softmax probabilities. Plain
// OpenMP loops on arguments Backend has checked; sums in double (their rounding alone depends
// on the thread count).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/kernel_kinds.h"

namespace dlt {
namespace {

constexpr int64_t kParallelMin = 1 << 14;  // below this, threads cost more than they save
constexpr double kLogFloor = 1e-37;        // log's argument floor, as cross-entropy's

// The first maximal value of row[0..c) (cross-entropy's accuracy).
int64_t first_max(const float* row, int64_t c) {
  int64_t best = 0;
  for (int64_t j = 1; j < c; ++j)
    if (row[j] > row[best]) best = j;
  return best;
}

// Checks int32 labels as cross-entropy does: counted labels into t (and, with cw, the weight
// sum); false with t.first_bad set at the first bad one.
bool count_labels(const int32_t* lab, int64_t n, int64_t c, const LossOptions& opt, const float* cw, LossTotals& t) {
  t.classes = static_cast<uint64_t>(c);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t l = lab[i];
    if (l == -1 && opt.undefined_labels) continue;
    if (l < 0 || l >= c) {
      t.first_bad = static_cast<uint64_t>(i);
      return false;
    }
    t.weight_sum += cw ? static_cast<double>(cw[l]) : 1.0;
    ++t.counted;
  }
  return true;
}

// The per-pixel losses' gradient through the softmax: for each counted row r (label l),
// dlogit_k = y_k (g_k - sum_j y_j g_j) with g_k = grad(r, l, k, row) (the loss's derivative by y_k);
// 0 for an undefined row.
template <class Grad>
void softmax_chain(const float* p, const int32_t* lab, int64_t rows, int64_t c, float* d, Grad grad) {
#pragma omp parallel if (rows * c > kParallelMin)
  {
    std::vector<double> g(static_cast<size_t>(c));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t l = lab[r];
      float* dr = d + r * c;
      if (l < 0) {
        std::fill(dr, dr + c, 0.f);
        continue;
      }
      const float* row = p + r * c;
      double dot = 0;
      for (int64_t k = 0; k < c; ++k) {
        g[k] = grad(r, l, k, row);
        dot += row[k] * g[k];
      }
      for (int64_t k = 0; k < c; ++k) dr[k] = static_cast<float>(row[k] * (g[k] - dot));
    }
  }
}

}  // namespace

static LossTotals cpu_regression_loss(Backend&, const Tensor& outputs, const Tensor& targets, const LossOptions& opt,
                                      Tensor& grad) {
  const int64_t n = opt.images, values = outputs.numel();
  const float* y = outputs.data();
  const float* tv = targets.data();
  float* g = grad.defined() ? grad.data() : nullptr;
  const LossKind kind = opt.kind;
  const double delta = opt.huber_delta;
  const float fdelta = opt.huber_delta, inv_n = 1.f / static_cast<float>(n);
  double loss = 0, sq = 0, abs_sum = 0, ape = 0;
  int64_t ape_count = 0;
#pragma omp parallel for if (values > kParallelMin) schedule(static) reduction(+ : loss, sq, abs_sum, ape, ape_count)
  for (int64_t i = 0; i < values; ++i) {
    const double e = static_cast<double>(y[i]) - static_cast<double>(tv[i]), a = std::abs(e);
    sq += e * e;
    abs_sum += a;
    if (tv[i] != 0.f) {
      ape += a / std::abs(static_cast<double>(tv[i]));
      ++ape_count;
    }
    const float ef = y[i] - tv[i];
    float gi = 0.f;
    if (kind == LossKind::kMse) {
      loss += e * e / 2;
      gi = ef * inv_n;
    } else if (kind == LossKind::kMae) {
      loss += a;
      gi = static_cast<float>((ef > 0.f) - (ef < 0.f)) * inv_n;
    } else {  // huber
      loss += a <= delta ? e * e / 2 : delta * (a - delta / 2);
      gi = std::abs(ef) <= fdelta ? ef * inv_n : (ef > 0.f ? fdelta : -fdelta) * inv_n;
    }
    if (g) g[i] = gi;
  }
  LossTotals t;
  t.loss_sum = loss;
  t.weight_sum = static_cast<double>(n);
  t.counted = static_cast<uint64_t>(n);
  t.classes = static_cast<uint64_t>(values / n);
  t.sq_sum = sq;
  t.abs_sum = abs_sum;
  t.ape_sum = ape;
  t.values = static_cast<uint64_t>(values);
  t.ape_count = static_cast<uint64_t>(ape_count);
  return t;
}

static LossTotals cpu_binary_cross_entropy(Backend&, const Tensor& probs, const Tensor& targets, const LossOptions& opt,
                                           Tensor& dlogits) {
  const int64_t n = opt.images, values = probs.numel(), c = values / n;
  const float* p = probs.data();
  const float* tv = targets.data();
  float* d = dlogits.defined() ? dlogits.data() : nullptr;
  LossTotals t;
  t.classes = static_cast<uint64_t>(c);
  for (int64_t i = 0; i < values; ++i)
    if (tv[i] != 0.f && tv[i] != 1.f) {
      t.first_bad = static_cast<uint64_t>(i);
      return t;
    }
  const float inv_n = 1.f / static_cast<float>(n);
  double loss = 0;
  int64_t tp = 0, fp = 0, fn = 0, exact = 0;
#pragma omp parallel for if (values > kParallelMin) schedule(static) reduction(+ : loss, tp, fp, fn, exact)
  for (int64_t i = 0; i < n; ++i) {
    bool all_right = true;
    for (int64_t j = i * c; j < (i + 1) * c; ++j) {
      const bool positive = tv[j] == 1.f, predicted = p[j] >= 0.5f;
      const double pj = p[j];
      loss -= std::log(std::max(positive ? pj : 1.0 - pj, kLogFloor));
      tp += predicted && positive;
      fp += predicted && !positive;
      fn += !predicted && positive;
      all_right = all_right && predicted == positive;
      if (d) d[j] = (p[j] - tv[j]) * inv_n;
    }
    exact += all_right;
  }
  t.loss_sum = loss;
  t.weight_sum = static_cast<double>(n);
  t.counted = static_cast<uint64_t>(n);
  t.values = static_cast<uint64_t>(values);
  t.tp = static_cast<uint64_t>(tp);
  t.fp = static_cast<uint64_t>(fp);
  t.fn = static_cast<uint64_t>(fn);
  t.exact = static_cast<uint64_t>(exact);
  return t;
}

// Per image: class counts n_k, intersections a_k = sum_p y t and unions b_k = sum_p y^2 + t^2
// over its counted pixels; with w_k = 1 / n_k^2 (0 for n_k = 0), A = sum w a and B = sum w b the
// image's loss is 1 - 2 A / B. An image without a counted pixel (B = 0) counts nowhere.
// dL/dy_k = -2 w_k (t_k B - 2 A y_k) / B^2 per pixel, then through the softmax.
static LossTotals cpu_generalized_dice(Backend&, const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                                       Tensor& dlogits) {
  const int64_t rows = labels.numel(), c = probs.numel() / rows, images = opt.images, pixels = rows / images;
  const float* p = probs.data();
  const int32_t* lab = labels.data_i32();
  float* d = dlogits.defined() ? dlogits.data() : nullptr;
  LossTotals t;
  if (!count_labels(lab, rows, c, opt, nullptr, t)) return t;
  // Per image: w_k (c), then A and B.
  std::vector<double> coef(static_cast<size_t>(images * (c + 2)), 0.0);
  double loss = 0, counted_images = 0;
  int64_t correct = 0;
#pragma omp parallel for if (rows * c > kParallelMin) schedule(static) reduction(+ : loss, counted_images, correct)
  for (int64_t img = 0; img < images; ++img) {
    std::vector<double> count(static_cast<size_t>(c), 0.0), inter(count), uni(count);
    for (int64_t r = img * pixels; r < (img + 1) * pixels; ++r) {
      const int32_t l = lab[r];
      if (l < 0) continue;
      const float* row = p + r * c;
      for (int64_t k = 0; k < c; ++k) uni[k] += static_cast<double>(row[k]) * row[k];
      count[l] += 1;
      inter[l] += row[l];
      uni[l] += 1;
      correct += first_max(row, c) == l;
    }
    double* w = coef.data() + img * (c + 2);
    double a = 0, b = 0;
    for (int64_t k = 0; k < c; ++k) {
      w[k] = count[k] > 0 ? 1.0 / (count[k] * count[k]) : 0.0;
      a += w[k] * inter[k];
      b += w[k] * uni[k];
    }
    w[c] = a;
    w[c + 1] = b;
    if (b > 0) {
      loss += 1 - 2 * a / b;
      counted_images += 1;
    }
  }
  t.loss_sum = loss;
  t.weight_sum = counted_images;
  t.correct = static_cast<uint64_t>(correct);
  if (!d) return t;
  const double inv_images = counted_images > 0 ? 1.0 / counted_images : 0.0;
  softmax_chain(p, lab, rows, c, d, [&](int64_t r, int32_t l, int64_t k, const float* row) {
    const double* w = coef.data() + (r / pixels) * (c + 2);
    const double a = w[c], b = w[c + 1];
    return -2 * inv_images / (b * b) * w[k] * ((k == l ? b : 0.0) - 2 * a * row[k]);
  });
  return t;
}

// -alpha (1 - p)^gamma log p of the label's probability p, weighted as cross-entropy. With
// q = 1 - p, h = p dL/dp = -alpha (q^gamma - gamma p q^(gamma-1) log p), and through the softmax
// dlogit_j = h ([j == l] - p_j) (no division by p).
static LossTotals cpu_focal_cross_entropy(Backend&, const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                                          Tensor& dlogits) {
  const int64_t n = labels.numel(), c = probs.numel() / n;
  const float* p = probs.data();
  const int32_t* lab = labels.data_i32();
  const float* cw = opt.class_weights.defined() ? opt.class_weights.data() : nullptr;
  float* d = dlogits.defined() ? dlogits.data() : nullptr;
  LossTotals t;
  if (!count_labels(lab, n, c, opt, cw, t)) return t;
  const double alpha = opt.focal_alpha, gamma = opt.focal_gamma;
  const double inv_w = t.weight_sum > 0 ? 1.0 / t.weight_sum : 0.0;
  double loss = 0;
  int64_t correct = 0;
#pragma omp parallel for if (n * c > kParallelMin) schedule(static) reduction(+ : loss, correct)
  for (int64_t i = 0; i < n; ++i) {
    const int32_t l = lab[i];
    if (l < 0) {
      if (d) std::fill(d + i * c, d + (i + 1) * c, 0.f);
      continue;
    }
    const float* row = p + i * c;
    const double w = cw ? static_cast<double>(cw[l]) : 1.0;
    const double pl = row[l], q = 1.0 - pl, log_p = std::log(std::max(pl, kLogFloor));
    const double qg = std::pow(q, gamma);
    loss -= w * alpha * qg * log_p;
    correct += first_max(row, c) == l;
    if (!d) continue;
    const double bend = gamma > 0 && q > 0 ? gamma * pl * std::pow(q, gamma - 1) * log_p : 0.0;
    const double h = -alpha * (qg - bend) * w * inv_w;
    for (int64_t j = 0; j < c; ++j) d[i * c + j] = static_cast<float>(h * ((j == l ? 1.0 : 0.0) - row[j]));
  }
  t.loss_sum = loss;
  t.correct = static_cast<uint64_t>(correct);
  return t;
}

DLT_REGISTER_KERNEL(RegressionLossKernel, DeviceType::kCpu, cpu_regression_loss);
DLT_REGISTER_KERNEL(BinaryCrossEntropyKernel, DeviceType::kCpu, cpu_binary_cross_entropy);
static LossTotals cpu_tversky(Backend&, const Tensor& probs, const Tensor& labels, const LossOptions& opt,
                              Tensor& dlogits) {
  const int64_t rows = labels.numel(), c = probs.numel() / rows, images = opt.images, pixels = rows / images;
  const double alpha = opt.tversky_alpha, beta = opt.tversky_beta;
  const float* p = probs.data();
  const int32_t* lab = labels.data_i32();
  float* d = dlogits.defined() ? dlogits.data() : nullptr;
  LossTotals t;
  if (!count_labels(lab, rows, c, opt, nullptr, t)) return t;
  // Per image and class: the loss's derivatives by y_k where the label is k, and where it is not.
  std::vector<double> coef(static_cast<size_t>(images * 2 * c), 0.0);
  double loss = 0, counted_images = 0;
  int64_t correct = 0;
#pragma omp parallel for if (rows * c > kParallelMin) schedule(static) reduction(+ : loss, counted_images, correct)
  for (int64_t img = 0; img < images; ++img) {
    std::vector<double> count(static_cast<size_t>(c), 0.0), tp(count), sum(count);
    bool any = false;
    for (int64_t r = img * pixels; r < (img + 1) * pixels; ++r) {
      const int32_t l = lab[r];
      if (l < 0) continue;
      const float* row = p + r * c;
      for (int64_t k = 0; k < c; ++k) sum[k] += row[k];
      count[l] += 1;
      tp[l] += row[l];
      correct += first_max(row, c) == l;
      any = true;
    }
    if (!any) continue;
    double* g = coef.data() + img * 2 * c;
    for (int64_t k = 0; k < c; ++k) {
      const double num = tp[k] + kTverskyEpsilon,
                   den = tp[k] + alpha * (sum[k] - tp[k]) + beta * (count[k] - tp[k]) + kTverskyEpsilon;
      loss += 1 - num / den;
      g[2 * k] = -(den - num * (1 - beta)) / (den * den);
      g[2 * k + 1] = num * alpha / (den * den);
    }
    counted_images += 1;
  }
  t.loss_sum = loss;
  t.weight_sum = counted_images;
  t.correct = static_cast<uint64_t>(correct);
  if (!d) return t;
  const double inv_images = counted_images > 0 ? 1.0 / counted_images : 0.0;
  softmax_chain(p, lab, rows, c, d, [&](int64_t r, int32_t l, int64_t k, const float*) {
    return inv_images * coef[static_cast<size_t>(((r / pixels) * c + k) * 2 + (k == l ? 0 : 1))];
  });
  return t;
}
DLT_REGISTER_KERNEL(GeneralizedDiceKernel, DeviceType::kCpu, cpu_generalized_dice);
DLT_REGISTER_KERNEL(TverskyKernel, DeviceType::kCpu, cpu_tversky);
DLT_REGISTER_KERNEL(FocalCrossEntropyKernel, DeviceType::kCpu, cpu_focal_cross_entropy);

}  // namespace dlt
