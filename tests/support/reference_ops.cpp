// Double-precision NHWC reference ops (see reference_ops.h): direct loops, no cleverness.
#include "support/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dlt::ref {
namespace {

inline int64_t nhwc(int64_t n, int64_t y, int64_t x, int64_t c, int64_t h, int64_t w, int64_t ch) {
  return ((n * h + y) * w + x) * ch + c;
}

// Calls f(n, oy, ox, k, iy, ix, i, j) for every in-bounds tap of every conv output.
template <class F>
void conv_taps(const ConvDesc& d, F f) {
  const int64_t oh = d.out_h(), ow = d.out_w();
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t i = 0; i < d.kh; ++i)
          for (int64_t j = 0; j < d.kw; ++j) {
            const int64_t iy = oy * d.stride_h - d.pad_t + i * d.dilation_h;
            const int64_t ix = ox * d.stride_w - d.pad_l + j * d.dilation_w;
            if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w) continue;
            f(n, oy, ox, iy, ix, i, j);
          }
}

// Filter k of a convolution with d.groups groups sees the input channels [first_c, first_c + C/G)
// of its group k / (K/G); its weights are w[((k * kh + i) * kw + j) * C/G + (c - first_c)].
int64_t first_input_channel(const ConvDesc& d, int64_t k) { return k / (d.k / d.groups) * d.group_c(); }

}  // namespace

Vec conv_forward(const ConvDesc& d, const Vec& x, const Vec& w, const Vec& b) {
  const int64_t oh = d.out_h(), ow = d.out_w(), cg = d.group_c();
  Vec y(d.n * oh * ow * d.k, 0.0);
  conv_taps(d, [&](int64_t n, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t i, int64_t j) {
    for (int64_t k = 0; k < d.k; ++k) {
      const int64_t c0 = first_input_channel(d, k);
      double s = 0;
      for (int64_t c = 0; c < cg; ++c)
        s += x[nhwc(n, iy, ix, c0 + c, d.h, d.w, d.c)] * w[((k * d.kh + i) * d.kw + j) * cg + c];
      y[nhwc(n, oy, ox, k, oh, ow, d.k)] += s;
    }
  });
  for (int64_t p = 0; p < d.n * oh * ow; ++p)
    for (int64_t k = 0; k < d.k; ++k) {
      double& v = y[p * d.k + k];
      v += b[k];
      if (d.fuse_relu) v = std::min(std::max(v, 0.0), static_cast<double>(d.relu_ceiling));  // ceiling: +inf or a clip
    }
  return y;
}

Vec conv_backward_data(const ConvDesc& d, const Vec& dy, const Vec& w) {
  const int64_t oh = d.out_h(), ow = d.out_w(), cg = d.group_c();
  Vec dx(d.n * d.h * d.w * d.c, 0.0);
  conv_taps(d, [&](int64_t n, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t i, int64_t j) {
    for (int64_t k = 0; k < d.k; ++k) {
      const int64_t c0 = first_input_channel(d, k);
      const double g = dy[nhwc(n, oy, ox, k, oh, ow, d.k)];
      for (int64_t c = 0; c < cg; ++c)
        dx[nhwc(n, iy, ix, c0 + c, d.h, d.w, d.c)] += g * w[((k * d.kh + i) * d.kw + j) * cg + c];
    }
  });
  return dx;
}

void conv_backward_weights(const ConvDesc& d, const Vec& x, const Vec& dy, Vec& dw, Vec& db) {
  const int64_t oh = d.out_h(), ow = d.out_w(), cg = d.group_c();
  dw.assign(d.weight_numel(), 0.0);
  db.assign(d.k, 0.0);
  conv_taps(d, [&](int64_t n, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t i, int64_t j) {
    for (int64_t k = 0; k < d.k; ++k) {
      const int64_t c0 = first_input_channel(d, k);
      const double g = dy[nhwc(n, oy, ox, k, oh, ow, d.k)];
      for (int64_t c = 0; c < cg; ++c)
        dw[((k * d.kh + i) * d.kw + j) * cg + c] += g * x[nhwc(n, iy, ix, c0 + c, d.h, d.w, d.c)];
    }
  });
  for (int64_t p = 0; p < d.n * oh * ow; ++p)
    for (int64_t k = 0; k < d.k; ++k) db[k] += dy[p * d.k + k];
}

namespace {
// Calls f(n, i, j, oy, ox, a, b) for every tap of every input pixel that lands inside the
// cropped transposed-convolution output.
template <class F>
void deconv_taps(const DeconvDesc& d, F f) {
  const int64_t oh = d.out_h(), ow = d.out_w();
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t i = 0; i < d.h; ++i)
      for (int64_t j = 0; j < d.w; ++j)
        for (int64_t a = 0; a < d.kh; ++a)
          for (int64_t b = 0; b < d.kw; ++b) {
            const int64_t oy = i * d.stride_h + a - d.crop_t, ox = j * d.stride_w + b - d.crop_l;
            if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
            f(n, i, j, oy, ox, a, b);
          }
}
}  // namespace

Vec deconv_forward(const DeconvDesc& d, const Vec& x, const Vec& w, const Vec& b) {
  const int64_t oh = d.out_h(), ow = d.out_w();
  Vec y(d.n * oh * ow * d.k, 0.0);
  deconv_taps(d, [&](int64_t n, int64_t i, int64_t j, int64_t oy, int64_t ox, int64_t a, int64_t bb) {
    for (int64_t c = 0; c < d.c; ++c) {
      const double v = x[nhwc(n, i, j, c, d.h, d.w, d.c)];
      for (int64_t k = 0; k < d.k; ++k)
        y[nhwc(n, oy, ox, k, oh, ow, d.k)] += v * w[((c * d.kh + a) * d.kw + bb) * d.k + k];
    }
  });
  for (int64_t p = 0; p < d.n * oh * ow; ++p)
    for (int64_t k = 0; k < d.k; ++k) y[p * d.k + k] += b[k];
  return y;
}

Vec deconv_backward_data(const DeconvDesc& d, const Vec& dy, const Vec& w) {
  const int64_t oh = d.out_h(), ow = d.out_w();
  Vec dx(d.n * d.h * d.w * d.c, 0.0);
  deconv_taps(d, [&](int64_t n, int64_t i, int64_t j, int64_t oy, int64_t ox, int64_t a, int64_t bb) {
    for (int64_t c = 0; c < d.c; ++c) {
      double s = 0;
      for (int64_t k = 0; k < d.k; ++k)
        s += dy[nhwc(n, oy, ox, k, oh, ow, d.k)] * w[((c * d.kh + a) * d.kw + bb) * d.k + k];
      dx[nhwc(n, i, j, c, d.h, d.w, d.c)] += s;
    }
  });
  return dx;
}

void deconv_backward_weights(const DeconvDesc& d, const Vec& x, const Vec& dy, Vec& dw, Vec& db) {
  const int64_t oh = d.out_h(), ow = d.out_w();
  dw.assign(d.c * d.kh * d.kw * d.k, 0.0);
  db.assign(d.k, 0.0);
  deconv_taps(d, [&](int64_t n, int64_t i, int64_t j, int64_t oy, int64_t ox, int64_t a, int64_t bb) {
    for (int64_t c = 0; c < d.c; ++c) {
      const double v = x[nhwc(n, i, j, c, d.h, d.w, d.c)];
      for (int64_t k = 0; k < d.k; ++k)
        dw[((c * d.kh + a) * d.kw + bb) * d.k + k] += v * dy[nhwc(n, oy, ox, k, oh, ow, d.k)];
    }
  });
  for (int64_t p = 0; p < d.n * oh * ow; ++p)
    for (int64_t k = 0; k < d.k; ++k) db[k] += dy[p * d.k + k];
}

Vec fc_forward(const FcDesc& d, const Vec& x, const Vec& w, const Vec& b) {
  Vec y(d.n * d.out);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t o = 0; o < d.out; ++o) {
      double s = b[o];
      for (int64_t i = 0; i < d.in; ++i) s += x[n * d.in + i] * w[o * d.in + i];
      y[n * d.out + o] = d.fuse_relu ? std::max(s, 0.0) : s;
    }
  return y;
}

Vec fc_backward_data(const FcDesc& d, const Vec& dy, const Vec& w) {
  Vec dx(d.n * d.in, 0.0);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t o = 0; o < d.out; ++o)
      for (int64_t i = 0; i < d.in; ++i) dx[n * d.in + i] += dy[n * d.out + o] * w[o * d.in + i];
  return dx;
}

void fc_backward_weights(const FcDesc& d, const Vec& x, const Vec& dy, Vec& dw, Vec& db) {
  dw.assign(d.out * d.in, 0.0);
  db.assign(d.out, 0.0);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t o = 0; o < d.out; ++o) {
      db[o] += dy[n * d.out + o];
      for (int64_t i = 0; i < d.in; ++i) dw[o * d.in + i] += dy[n * d.out + o] * x[n * d.in + i];
    }
}

namespace {

// For every pool output calls f(out_index, window) where window lists the in-bounds input
// indices in row-major window order; `taps` = kh*kw counts padded positions too.
template <class F>
void pool_windows(const PoolDesc& d, F f) {
  const int64_t oh = d.out_h(), ow = d.out_w();
  std::vector<int64_t> window;
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t c = 0; c < d.c; ++c) {
          window.clear();
          for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j) {
              const int64_t iy = oy * d.stride_h - d.pad_t + i;
              const int64_t ix = ox * d.stride_w - d.pad_l + j;
              if (iy >= 0 && iy < d.h && ix >= 0 && ix < d.w) window.push_back(nhwc(n, iy, ix, c, d.h, d.w, d.c));
            }
          f(nhwc(n, oy, ox, c, oh, ow, d.c), window);
        }
}

}  // namespace

Vec pool_forward(const PoolDesc& d, const Vec& x) {
  Vec y(d.n * d.out_h() * d.out_w() * d.c, 0.0);
  const double taps = static_cast<double>(d.kh * d.kw);
  pool_windows(d, [&](int64_t o, const std::vector<int64_t>& win) {
    if (d.kind == PoolKind::kMax) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t i : win) m = std::max(m, x[i]);
      y[o] = m;
    } else {
      double s = 0;
      for (int64_t i : win) s += x[i];
      y[o] = s / (d.exclude_padding ? static_cast<double>(win.size()) : taps);
    }
  });
  return y;
}

Vec pool_backward(const PoolDesc& d, const Vec& x, const Vec& dy) {
  Vec dx(d.n * d.h * d.w * d.c, 0.0);
  const double taps = static_cast<double>(d.kh * d.kw);
  pool_windows(d, [&](int64_t o, const std::vector<int64_t>& win) {
    if (win.empty()) return;
    if (d.kind == PoolKind::kMax) {
      int64_t best = win[0];
      for (int64_t i : win)
        if (x[i] > x[best]) best = i;
      dx[best] += dy[o];
    } else {
      const double n = d.exclude_padding ? static_cast<double>(win.size()) : taps;
      for (int64_t i : win) dx[i] += dy[o] / n;
    }
  });
  return dx;
}

Vec bn_forward_training(const BatchNormDesc& d, const Vec& x, const Vec& scale, const Vec& offset, Vec* mean_out,
                        Vec* var_out) {
  const int64_t m = d.n * d.h * d.w;
  Vec mean(d.c, 0.0), var(d.c, 0.0);
  for (int64_t p = 0; p < m; ++p)
    for (int64_t c = 0; c < d.c; ++c) mean[c] += x[p * d.c + c] / m;
  for (int64_t p = 0; p < m; ++p)
    for (int64_t c = 0; c < d.c; ++c) {
      const double t = x[p * d.c + c] - mean[c];
      var[c] += t * t / m;
    }
  Vec y = bn_forward_inference(d, x, scale, offset, mean, var);
  if (mean_out) *mean_out = mean;
  if (var_out) *var_out = var;
  return y;
}

Vec bn_forward_inference(const BatchNormDesc& d, const Vec& x, const Vec& scale, const Vec& offset, const Vec& mean,
                         const Vec& var) {
  const int64_t m = d.n * d.h * d.w;
  Vec y(x.size());
  for (int64_t p = 0; p < m; ++p)
    for (int64_t c = 0; c < d.c; ++c) {
      const int64_t i = p * d.c + c;
      const double v = scale[c] * (x[i] - mean[c]) / std::sqrt(var[c] + d.epsilon) + offset[c];
      y[i] = d.fuse_relu ? std::max(v, 0.0) : v;
    }
  return y;
}

void bn_backward(const BatchNormDesc& d, const Vec& x, const Vec& dy, const Vec& scale, const Vec& mean, const Vec& var,
                 Vec& dx, Vec& dscale, Vec& doffset) {
  const int64_t m = d.n * d.h * d.w;
  dscale.assign(d.c, 0.0);
  doffset.assign(d.c, 0.0);
  dx.assign(x.size(), 0.0);
  Vec inv_std(d.c);
  for (int64_t c = 0; c < d.c; ++c) inv_std[c] = 1.0 / std::sqrt(var[c] + d.epsilon);
  for (int64_t p = 0; p < m; ++p)
    for (int64_t c = 0; c < d.c; ++c) {
      const int64_t i = p * d.c + c;
      doffset[c] += dy[i];
      dscale[c] += dy[i] * (x[i] - mean[c]) * inv_std[c];
    }
  for (int64_t p = 0; p < m; ++p)
    for (int64_t c = 0; c < d.c; ++c) {
      const int64_t i = p * d.c + c;
      const double xhat = (x[i] - mean[c]) * inv_std[c];
      dx[i] = scale[c] * inv_std[c] * (dy[i] - doffset[c] / m - xhat * dscale[c] / m);
    }
}

namespace {

// Window [lo, hi) of channel c.
inline void lrn_window(const LrnDesc& d, int64_t c, int64_t& lo, int64_t& hi) {
  const int64_t half = (d.size - 1) / 2;
  lo = std::max<int64_t>(c - half, 0);
  hi = std::min<int64_t>(c - half + d.size, d.c);
}

Vec lrn_denominators(const LrnDesc& d, const Vec& x) {  // s = k + alpha/size * sum x^2
  Vec s(x.size());
  for (int64_t p = 0; p < d.n * d.h * d.w; ++p)
    for (int64_t c = 0; c < d.c; ++c) {
      int64_t lo, hi;
      lrn_window(d, c, lo, hi);
      double sum = 0;
      for (int64_t j = lo; j < hi; ++j) sum += x[p * d.c + j] * x[p * d.c + j];
      s[p * d.c + c] = d.k + d.alpha / d.size * sum;
    }
  return s;
}

}  // namespace

Vec lrn_forward(const LrnDesc& d, const Vec& x) {
  Vec s = lrn_denominators(d, x);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * std::pow(s[i], -static_cast<double>(d.beta));
  return y;
}

Vec lrn_backward(const LrnDesc& d, const Vec& x, const Vec& dy) {
  const double beta = d.beta;
  Vec s = lrn_denominators(d, x);
  Vec dx(x.size(), 0.0);
  for (int64_t p = 0; p < d.n * d.h * d.w; ++p)
    for (int64_t c = 0; c < d.c; ++c) {
      // y_c = x_c s_c^-beta ; dy_c/dx_j = [c == j] s_c^-beta - 2 beta alpha/size x_c x_j s_c^(-beta-1)
      const int64_t i = p * d.c + c;
      dx[i] += dy[i] * std::pow(s[i], -beta);
      int64_t lo, hi;
      lrn_window(d, c, lo, hi);
      const double common = -2.0 * beta * d.alpha / d.size * dy[i] * x[i] * std::pow(s[i], -beta - 1);
      for (int64_t j = lo; j < hi; ++j) dx[p * d.c + j] += common * x[p * d.c + j];
    }
  return dx;
}

namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi), PyTorch's kBeta / sqrt 2
constexpr double kGeluKappa = 0.044715;

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

}  // namespace

Vec act_forward(const ActDesc& d, const Vec& x) {
  const double alpha = d.alpha, beta = d.beta;
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    switch (d.kind) {
      case ActKind::kRelu:
        y[i] = v > 0 ? v : 0;
        break;
      case ActKind::kLeakyRelu:
        y[i] = v > 0 ? v : alpha * v;
        break;
      case ActKind::kElu:
        y[i] = v > 0 ? v : alpha * (std::exp(v) - 1);
        break;
      case ActKind::kClippedRelu:
        y[i] = std::min(std::max(v, 0.0), alpha);
        break;
      case ActKind::kSigmoid:
        y[i] = sigmoid(v);
        break;
      case ActKind::kTanh:
        y[i] = std::tanh(v);
        break;
      case ActKind::kSwish:
        y[i] = v * sigmoid(v);
        break;
      case ActKind::kGelu:
        y[i] = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
        break;
      case ActKind::kGeluTanh:
        y[i] = 0.5 * v * (1 + std::tanh(kSqrt2OverPi * (v + kGeluKappa * v * v * v)));
        break;
      case ActKind::kHardSigmoid:
        y[i] = std::min(std::max(alpha * v + beta, 0.0), 1.0);
        break;
      case ActKind::kHardSwish:
        y[i] = v * std::min(std::max(v + 3, 0.0), 6.0) / 6;
        break;
    }
  }
  return y;
}

Vec act_backward(const ActDesc& d, const Vec& x, const Vec& dy) {
  const double alpha = d.alpha, beta = d.beta;
  Vec dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    double g = 0;  // dy/dx
    switch (d.kind) {
      case ActKind::kRelu:
        g = v > 0 ? 1 : 0;
        break;
      case ActKind::kLeakyRelu:
        g = v > 0 ? 1 : alpha;
        break;
      case ActKind::kElu:
        g = v > 0 ? 1 : alpha * std::exp(v);
        break;
      case ActKind::kClippedRelu:
        g = v > 0 && v < alpha ? 1 : 0;
        break;
      case ActKind::kSigmoid:
        g = sigmoid(v) * (1 - sigmoid(v));
        break;
      case ActKind::kTanh:
        g = 1 - std::tanh(v) * std::tanh(v);
        break;
      case ActKind::kSwish:
        g = sigmoid(v) * (1 + v * (1 - sigmoid(v)));
        break;
      case ActKind::kGelu:  // Phi(x) + x phi(x)
        g = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
        break;
      case ActKind::kGeluTanh: {
        const double t = std::tanh(kSqrt2OverPi * (v + kGeluKappa * v * v * v));
        g = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * kSqrt2OverPi * (1 + 3 * kGeluKappa * v * v);
        break;
      }
      case ActKind::kHardSigmoid: {
        const double u = alpha * v + beta;
        g = u > 0 && u < 1 ? alpha : 0;
        break;
      }
      case ActKind::kHardSwish:
        g = v < -3 ? 0 : v <= 3 ? v / 3 + 0.5 : 1;
        break;
    }
    dx[i] = g * dy[i];
  }
  return dx;
}

Vec softmax_forward(int64_t rows, int64_t c, const Vec& x) {
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = x[r * c];
    for (int64_t j = 1; j < c; ++j) m = std::max(m, x[r * c + j]);
    double s = 0;
    for (int64_t j = 0; j < c; ++j) s += y[r * c + j] = std::exp(x[r * c + j] - m);
    for (int64_t j = 0; j < c; ++j) y[r * c + j] /= s;
  }
  return y;
}

Vec softmax_backward(int64_t rows, int64_t c, const Vec& y, const Vec& dy) {
  Vec dx(y.size());
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (int64_t j = 0; j < c; ++j) dot += y[r * c + j] * dy[r * c + j];
    for (int64_t j = 0; j < c; ++j) dx[r * c + j] = y[r * c + j] * (dy[r * c + j] - dot);
  }
  return dx;
}

Vec concat_forward(int64_t pixels, const std::vector<int64_t>& channels, const std::vector<Vec>& xs) {
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  Vec y(pixels * total);
  for (int64_t p = 0; p < pixels; ++p) {
    int64_t off = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      for (int64_t c = 0; c < channels[i]; ++c) y[p * total + off + c] = xs[i][p * channels[i] + c];
      off += channels[i];
    }
  }
  return y;
}

std::vector<Vec> concat_backward(int64_t pixels, const std::vector<int64_t>& channels, const Vec& dy) {
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  std::vector<Vec> dxs;
  int64_t off = 0;
  for (int64_t ch : channels) {
    Vec dx(pixels * ch);
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t c = 0; c < ch; ++c) dx[p * ch + c] = dy[p * total + off + c];
    dxs.push_back(std::move(dx));
    off += ch;
  }
  return dxs;
}

std::vector<int32_t> max_pool_indices(const PoolDesc& d, const Vec& x) {
  const int64_t oh = d.out_h(), ow = d.out_w();
  std::vector<int32_t> idx(d.n * oh * ow * d.c);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t c = 0; c < d.c; ++c) {
          int64_t best = -1;
          for (int64_t a = 0; a < d.kh; ++a)
            for (int64_t b = 0; b < d.kw; ++b) {
              const int64_t h = i * d.stride_h - d.pad_t + a, w = j * d.stride_w - d.pad_l + b;
              if (h < 0 || h >= d.h || w < 0 || w >= d.w) continue;
              const int64_t p = h * d.w + w;
              if (best < 0 || x[(n * d.h * d.w + p) * d.c + c] > x[(n * d.h * d.w + best) * d.c + c]) best = p;
            }
          idx[((n * oh + i) * ow + j) * d.c + c] = static_cast<int32_t>(best);
        }
  return idx;
}

Vec max_unpool(const PoolDesc& d, const Vec& pooled, const std::vector<int32_t>& idx) {
  const int64_t plane_in = d.out_h() * d.out_w(), plane_out = d.h * d.w;
  Vec y(d.n * plane_out * d.c, 0.0);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t p = 0; p < plane_in; ++p)
      for (int64_t c = 0; c < d.c; ++c) {
        const int64_t k = (n * plane_in + p) * d.c + c;
        y[(n * plane_out + idx[k]) * d.c + c] += pooled[k];
      }
  return y;
}

Vec crop2d_forward(const CropDesc& d, const Vec& x) {
  Vec y(d.n * d.out_h * d.out_w * d.c);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t i = 0; i < d.out_h; ++i)
      for (int64_t j = 0; j < d.out_w; ++j)
        for (int64_t c = 0; c < d.c; ++c)
          y[nhwc(n, i, j, c, d.out_h, d.out_w, d.c)] = x[nhwc(n, d.top + i, d.left + j, c, d.h, d.w, d.c)];
  return y;
}

Vec crop2d_backward(const CropDesc& d, const Vec& dy) {
  Vec dx(d.n * d.h * d.w * d.c, 0.0);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t i = 0; i < d.out_h; ++i)
      for (int64_t j = 0; j < d.out_w; ++j)
        for (int64_t c = 0; c < d.c; ++c)
          dx[nhwc(n, d.top + i, d.left + j, c, d.h, d.w, d.c)] = dy[nhwc(n, i, j, c, d.out_h, d.out_w, d.c)];
  return dx;
}

double cross_entropy(int64_t n, int64_t c, const Vec& probs, const std::vector<int32_t>& labels, Vec* dlogits,
                     int64_t* correct, const Vec& weights, int64_t* counted) {
  double loss = 0, wsum = 0;
  int64_t right = 0, count = 0;
  if (dlogits) dlogits->assign(n * c, 0.0);
  auto weight = [&](int64_t l) { return weights.empty() ? 1.0 : weights[l]; };
  for (int64_t i = 0; i < n; ++i)
    if (labels[i] >= 0) wsum += weight(labels[i]), ++count;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = labels[i];
    if (l < 0) continue;  // undefined: no loss, zero gradient
    loss -= weight(l) * std::log(std::max(probs[i * c + l], 1e-37));
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j)
      if (probs[i * c + j] > probs[i * c + best]) best = j;
    right += best == l;
    if (dlogits)
      for (int64_t j = 0; j < c; ++j) (*dlogits)[i * c + j] = weight(l) * (probs[i * c + j] - (j == l)) / wsum;
  }
  if (correct) *correct = right;
  if (counted) *counted = count;
  return wsum > 0 ? loss / wsum : 0.0;
}

}  // namespace dlt::ref
