// The losses' double references (reference_losses.h): loops over the definitions.
#include "support/reference_losses.h"

#include <algorithm>
#include <cmath>

#include "support/reference_ops.h"

namespace dlt::ref {

namespace {
double sign(double e) { return e > 0 ? 1.0 : e < 0 ? -1.0 : 0.0; }
double log_floor(double v) { return std::log(std::max(v, 1e-37)); }
int64_t first_max(const double* row, int64_t c) {
  int64_t best = 0;
  for (int64_t j = 1; j < c; ++j)
    if (row[j] > row[best]) best = j;
  return best;
}
}  // namespace

LossResult regression_loss(LossKind kind, int64_t n, const Vec& y, const Vec& t, double delta) {
  LossResult r;
  r.weight = static_cast<double>(n);
  r.counted = n;
  r.grad.resize(y.size());
  double sum = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double e = y[i] - t[i], a = std::abs(e);
    r.sq += e * e;
    r.abs += a;
    if (t[i] != 0) r.ape += a / std::abs(t[i]), ++r.ape_count;
    double g = 0;
    if (kind == LossKind::kMse) {
      sum += e * e / 2, g = e;
    } else if (kind == LossKind::kMae) {
      sum += a, g = sign(e);
    } else if (a <= delta) {  // huber, quadratic
      sum += e * e / 2, g = e;
    } else {  // huber, linear
      sum += delta * (a - delta / 2), g = delta * sign(e);
    }
    r.grad[i] = g / static_cast<double>(n);
  }
  r.loss = sum / static_cast<double>(n);
  return r;
}

LossResult binary_cross_entropy(int64_t n, const Vec& p, const Vec& t) {
  LossResult r;
  r.weight = static_cast<double>(n);
  r.counted = n;
  r.grad.resize(p.size());
  const int64_t c = static_cast<int64_t>(p.size()) / n;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool all_right = true;
    for (int64_t j = i * c; j < (i + 1) * c; ++j) {
      sum -= t[j] * log_floor(p[j]) + (1 - t[j]) * log_floor(1 - p[j]);
      const bool predicted = p[j] >= 0.5, positive = t[j] == 1;
      r.tp += predicted && positive;
      r.fp += predicted && !positive;
      r.fn += !predicted && positive;
      all_right = all_right && predicted == positive;
      // dL/dp = -(t / p - (1 - t) / (1 - p)) / n; the sigmoid's derivative is p (1 - p).
      const double dl_dp = -(t[j] / p[j] - (1 - t[j]) / (1 - p[j])) / static_cast<double>(n);
      r.grad[j] = dl_dp * p[j] * (1 - p[j]);
    }
    r.exact += all_right;
  }
  r.loss = sum / static_cast<double>(n);
  return r;
}

LossResult generalized_dice(int64_t images, int64_t c, const Vec& probs, const std::vector<int32_t>& labels) {
  LossResult r;
  const int64_t rows = static_cast<int64_t>(labels.size()), pixels = rows / images;
  Vec dl_dy(probs.size(), 0.0);
  double sum = 0;
  for (int64_t img = 0; img < images; ++img) {
    Vec count(c, 0.0), inter(c, 0.0), uni(c, 0.0);
    for (int64_t p = img * pixels; p < (img + 1) * pixels; ++p) {
      if (labels[p] < 0) continue;
      ++r.counted;
      r.correct += first_max(&probs[p * c], c) == labels[p];
      for (int64_t k = 0; k < c; ++k) {
        const double y = probs[p * c + k], t = k == labels[p] ? 1.0 : 0.0;
        count[k] += t;
        inter[k] += y * t;
        uni[k] += y * y + t * t;
      }
    }
    Vec w(c, 0.0);
    double a = 0, b = 0;
    for (int64_t k = 0; k < c; ++k) {
      if (count[k] > 0) w[k] = 1 / (count[k] * count[k]);
      a += w[k] * inter[k];
      b += w[k] * uni[k];
    }
    if (b == 0) continue;  // no counted pixel
    sum += 1 - 2 * a / b;
    r.weight += 1;
    // L = 1 - 2 A / B: dL/dy = -2 (B dA/dy - A dB/dy) / B^2, dA/dy_k = w_k t_k, dB/dy_k = 2 w_k y_k.
    for (int64_t p = img * pixels; p < (img + 1) * pixels; ++p) {
      if (labels[p] < 0) continue;
      for (int64_t k = 0; k < c; ++k) {
        const double y = probs[p * c + k], t = k == labels[p] ? 1.0 : 0.0;
        dl_dy[p * c + k] = -2 * (b * w[k] * t - a * 2 * w[k] * y) / (b * b);
      }
    }
  }
  if (r.weight > 0) {
    r.loss = sum / r.weight;
    for (double& g : dl_dy) g /= r.weight;
  }
  r.grad = softmax_backward(rows, c, probs, dl_dy);
  return r;
}

LossResult tversky(int64_t images, int64_t c, const Vec& probs, const std::vector<int32_t>& labels, double alpha,
                   double beta) {
  LossResult r;
  const int64_t rows = static_cast<int64_t>(labels.size()), pixels = rows / images;
  const double e = kTverskyEpsilon;
  Vec dl_dy(probs.size(), 0.0);
  double sum = 0;
  for (int64_t img = 0; img < images; ++img) {
    Vec tp(c, 0.0), fp(c, 0.0), fn(c, 0.0);
    bool any = false;
    for (int64_t p = img * pixels; p < (img + 1) * pixels; ++p) {
      if (labels[p] < 0) continue;
      any = true;
      ++r.counted;
      r.correct += first_max(&probs[p * c], c) == labels[p];
      for (int64_t k = 0; k < c; ++k) {
        const double y = probs[p * c + k], t = k == labels[p] ? 1.0 : 0.0;
        tp[k] += y * t;
        fp[k] += y * (1 - t);
        fn[k] += (1 - y) * t;
      }
    }
    if (!any) continue;
    r.weight += 1;
    // L = sum_k 1 - N_k / D_k, N = TP + e, D = TP + alpha FP + beta FN + e; by y_k of a pixel with
    // target t: dN = t, dD = t + alpha (1 - t) - beta t.
    Vec n(c), d(c);
    for (int64_t k = 0; k < c; ++k) {
      n[k] = tp[k] + e;
      d[k] = tp[k] + alpha * fp[k] + beta * fn[k] + e;
      sum += 1 - n[k] / d[k];
    }
    for (int64_t p = img * pixels; p < (img + 1) * pixels; ++p) {
      if (labels[p] < 0) continue;
      for (int64_t k = 0; k < c; ++k) {
        const double t = k == labels[p] ? 1.0 : 0.0, dn = t, dd = t + alpha * (1 - t) - beta * t;
        dl_dy[p * c + k] = -(dn * d[k] - n[k] * dd) / (d[k] * d[k]);
      }
    }
  }
  if (r.weight > 0) {
    r.loss = sum / r.weight;
    for (double& g : dl_dy) g /= r.weight;
  }
  r.grad = softmax_backward(rows, c, probs, dl_dy);
  return r;
}

LossResult focal_cross_entropy(int64_t c, const Vec& probs, const std::vector<int32_t>& labels, double gamma,
                               double alpha, const Vec& weights) {
  LossResult r;
  const int64_t rows = static_cast<int64_t>(labels.size());
  auto weight = [&](int64_t l) { return weights.empty() ? 1.0 : weights[l]; };
  for (int64_t i = 0; i < rows; ++i)
    if (labels[i] >= 0) r.weight += weight(labels[i]), ++r.counted;
  Vec dl_dp(probs.size(), 0.0);
  double sum = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t l = labels[i];
    if (l < 0) continue;
    const double p = probs[i * c + l], q = 1 - p, w = weight(l);
    sum += w * -alpha * std::pow(q, gamma) * log_floor(p);
    r.correct += first_max(&probs[i * c], c) == l;
    // d/dp of -alpha q^gamma log p = -alpha (q^gamma / p - gamma q^(gamma-1) log p).
    dl_dp[i * c + l] = w * -alpha * (std::pow(q, gamma) / p - gamma * std::pow(q, gamma - 1) * std::log(p)) / r.weight;
  }
  r.loss = r.weight > 0 ? sum / r.weight : 0.0;
  r.grad = softmax_backward(rows, c, probs, dl_dp);
  return r;
}

}  // namespace dlt::ref
