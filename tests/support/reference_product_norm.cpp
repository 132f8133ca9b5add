// Reference ops (reference_ops.h) of the broadcasting product and of layer normalization, in
// double precision, written for clarity.
#include <cmath>

#include "support/reference_ops.h"

namespace dlt::ref {

namespace {
// Where element (img, pixel, ch) of input i is: its own, its image's channel when repeated over
// the pixels, its pixel's value when repeated over the channels.
size_t index(const ProductDesc& d, size_t i, const Vec& x, int64_t img, int64_t p, int64_t ch) {
  switch (d.extent(i, static_cast<int64_t>(x.size()))) {
    case ProductDesc::kChannels:
      return static_cast<size_t>(img * d.c + ch);
    case ProductDesc::kPixels:
      return static_cast<size_t>(img * d.pixels + p);
    default:
      return static_cast<size_t>((img * d.pixels + p) * d.c + ch);
  }
}
double at(const ProductDesc& d, size_t i, const Vec& x, int64_t img, int64_t p, int64_t ch) {
  return x[index(d, i, x, img, p, ch)];
}
}  // namespace

Vec multiply_forward(const ProductDesc& d, const std::vector<Vec>& xs) {
  Vec y(static_cast<size_t>(d.n * d.pixels * d.c));
  for (int64_t img = 0; img < d.n; ++img)
    for (int64_t p = 0; p < d.pixels; ++p)
      for (int64_t ch = 0; ch < d.c; ++ch) {
        double v = 1;
        for (size_t i = 0; i < xs.size(); ++i) v *= at(d, i, xs[i], img, p, ch);
        y[static_cast<size_t>((img * d.pixels + p) * d.c + ch)] = v;
      }
  return y;
}

Vec multiply_backward(const ProductDesc& d, const std::vector<Vec>& xs, const Vec& dy, size_t i) {
  Vec dx(xs[i].size(), 0.0);
  for (int64_t img = 0; img < d.n; ++img)
    for (int64_t p = 0; p < d.pixels; ++p)
      for (int64_t ch = 0; ch < d.c; ++ch) {
        double g = dy[static_cast<size_t>((img * d.pixels + p) * d.c + ch)];
        for (size_t j = 0; j < xs.size(); ++j)
          if (j != i) g *= at(d, j, xs[j], img, p, ch);
        dx[index(d, i, xs[i], img, p, ch)] += g;
      }
  return dx;
}

namespace {
// Mean and biased variance of row r.
void row_moments(const LayerNormDesc& d, const Vec& x, int64_t r, double& mean, double& var) {
  mean = 0;
  for (int64_t j = 0; j < d.length; ++j) mean += x[static_cast<size_t>(r * d.length + j)];
  mean /= static_cast<double>(d.length);
  var = 0;
  for (int64_t j = 0; j < d.length; ++j) {
    const double e = x[static_cast<size_t>(r * d.length + j)] - mean;
    var += e * e;
  }
  var /= static_cast<double>(d.length);
}
}  // namespace

Vec layer_norm_forward(const LayerNormDesc& d, const Vec& x, const Vec& scale, const Vec& offset, Vec* mean, Vec* var) {
  Vec y(x.size());
  if (mean) mean->assign(static_cast<size_t>(d.rows), 0.0);
  if (var) var->assign(static_cast<size_t>(d.rows), 0.0);
  for (int64_t r = 0; r < d.rows; ++r) {
    double mu = 0, v = 0;
    row_moments(d, x, r, mu, v);
    if (mean) (*mean)[static_cast<size_t>(r)] = mu;
    if (var) (*var)[static_cast<size_t>(r)] = v;
    const double sigma = std::sqrt(v + static_cast<double>(d.epsilon));
    for (int64_t j = 0; j < d.length; ++j) {
      const size_t k = static_cast<size_t>(r * d.length + j), ch = static_cast<size_t>(j % d.c);
      y[k] = (x[k] - mu) / sigma * scale[ch] + offset[ch];
    }
  }
  return y;
}

void layer_norm_backward(const LayerNormDesc& d, const Vec& x, const Vec& dy, const Vec& scale, Vec& dx, Vec& dscale,
                         Vec& doffset) {
  dx.assign(x.size(), 0.0);
  dscale.assign(static_cast<size_t>(d.c), 0.0);
  doffset.assign(static_cast<size_t>(d.c), 0.0);
  const double len = static_cast<double>(d.length);
  for (int64_t r = 0; r < d.rows; ++r) {
    double mu = 0, v = 0;
    row_moments(d, x, r, mu, v);
    const double sigma = std::sqrt(v + static_cast<double>(d.epsilon));
    double sum_g = 0, sum_gx = 0;  // over the row: g = dy * scale, g * xhat
    for (int64_t j = 0; j < d.length; ++j) {
      const size_t k = static_cast<size_t>(r * d.length + j), ch = static_cast<size_t>(j % d.c);
      const double xhat = (x[k] - mu) / sigma, g = dy[k] * scale[ch];
      sum_g += g;
      sum_gx += g * xhat;
      dscale[ch] += dy[k] * xhat;
      doffset[ch] += dy[k];
    }
    for (int64_t j = 0; j < d.length; ++j) {
      const size_t k = static_cast<size_t>(r * d.length + j), ch = static_cast<size_t>(j % d.c);
      const double xhat = (x[k] - mu) / sigma;
      dx[k] = (dy[k] * scale[ch] - sum_g / len - xhat * sum_gx / len) / sigma;
    }
  }
}

// Group (i, g): the indices of its values, pixel by pixel, channel by channel.
static std::vector<size_t> group_indices(const GroupNormDesc& d, int64_t i, int64_t g) {
  std::vector<size_t> k;
  const int64_t cg = d.c / d.groups;
  for (int64_t p = 0; p < d.pixels; ++p)
    for (int64_t j = 0; j < cg; ++j) k.push_back(static_cast<size_t>((i * d.pixels + p) * d.c + g * cg + j));
  return k;
}

Vec group_norm_forward(const GroupNormDesc& d, const Vec& x, const Vec& scale, const Vec& offset, Vec* mean, Vec* var) {
  Vec y(x.size());
  if (mean) mean->assign(static_cast<size_t>(d.n * d.groups), 0.0);
  if (var) var->assign(static_cast<size_t>(d.n * d.groups), 0.0);
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t g = 0; g < d.groups; ++g) {
      const std::vector<size_t> ks = group_indices(d, i, g);
      double mu = 0, v = 0;
      for (size_t k : ks) mu += x[k];
      mu /= static_cast<double>(ks.size());
      for (size_t k : ks) v += (x[k] - mu) * (x[k] - mu);
      v /= static_cast<double>(ks.size());
      if (mean) (*mean)[static_cast<size_t>(i * d.groups + g)] = mu;
      if (var) (*var)[static_cast<size_t>(i * d.groups + g)] = v;
      const double sigma = std::sqrt(v + static_cast<double>(d.epsilon));
      for (size_t k : ks) {
        const size_t ch = k % static_cast<size_t>(d.c);
        y[k] = (x[k] - mu) / sigma * scale[ch] + offset[ch];
      }
    }
  return y;
}

void group_norm_backward(const GroupNormDesc& d, const Vec& x, const Vec& dy, const Vec& scale, Vec& dx, Vec& dscale,
                         Vec& doffset) {
  dx.assign(x.size(), 0.0);
  dscale.assign(static_cast<size_t>(d.c), 0.0);
  doffset.assign(static_cast<size_t>(d.c), 0.0);
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t g = 0; g < d.groups; ++g) {
      const std::vector<size_t> ks = group_indices(d, i, g);
      const double m = static_cast<double>(ks.size());
      double mu = 0, v = 0;
      for (size_t k : ks) mu += x[k];
      mu /= m;
      for (size_t k : ks) v += (x[k] - mu) * (x[k] - mu);
      v /= m;
      const double sigma = std::sqrt(v + static_cast<double>(d.epsilon));
      double sum_g = 0, sum_gx = 0;  // over the group: g = dy * scale, g * xhat
      for (size_t k : ks) {
        const size_t ch = k % static_cast<size_t>(d.c);
        const double xhat = (x[k] - mu) / sigma, gv = dy[k] * scale[ch];
        sum_g += gv;
        sum_gx += gv * xhat;
        dscale[ch] += dy[k] * xhat;
        doffset[ch] += dy[k];
      }
      for (size_t k : ks) {
        const size_t ch = k % static_cast<size_t>(d.c);
        const double xhat = (x[k] - mu) / sigma;
        dx[k] = (dy[k] * scale[ch] - sum_g / m - xhat * sum_gx / m) / sigma;
      }
    }
}

Vec prelu_forward(const PReluDesc& d, const Vec& x, const Vec& alpha) {
  Vec y(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    const double a = alpha[d.alphas == 1 ? 0 : k % static_cast<size_t>(d.c)];
    y[k] = x[k] > 0 ? x[k] : a * x[k];
  }
  return y;
}

void prelu_backward(const PReluDesc& d, const Vec& x, const Vec& alpha, const Vec& dy, Vec& dx, Vec& dalpha) {
  dx.assign(x.size(), 0.0);
  dalpha.assign(static_cast<size_t>(d.alphas), 0.0);
  for (size_t k = 0; k < x.size(); ++k) {
    const size_t j = d.alphas == 1 ? 0 : k % static_cast<size_t>(d.c);
    dx[k] = x[k] > 0 ? dy[k] : alpha[j] * dy[k];
    if (!(x[k] > 0)) dalpha[j] += dy[k] * x[k];
  }
}

}  // namespace dlt::ref
