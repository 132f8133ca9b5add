// The reference separable self-attention (reference_ops.h): the image unfolded as MobileViT v2
// does (x.reshape(B, C, H/ph, ph, W/pw, pw).permute(0, 1, 3, 5, 2, 4) into (C, P, N)), the
// attention on the unfolded planes, the result folded back. Double precision throughout.
#include <cmath>

#include "support/reference_ops.h"

namespace dlt::ref {

namespace {

// Index of (n, h, w, ch) in an NHWC image of `chans` channels for patch position p (row i, column
// j inside the patch: p = i pw + j) of patch q (row a, column b of patches: q = a (w / pw) + b).
size_t at(const SeparableAttentionDesc& d, int64_t n, int64_t chans, int64_t ch, int64_t p, int64_t q) {
  const int64_t i = p / d.pw, j = p % d.pw, a = q / (d.w / d.pw), b = q % (d.w / d.pw);
  return static_cast<size_t>(((n * d.h + a * d.ph + i) * d.w + b * d.pw + j) * chans + ch);
}

}  // namespace

Vec separable_attention_forward(const SeparableAttentionDesc& d, const Vec& x) {
  const int64_t P = d.ph * d.pw, N = (d.h / d.ph) * (d.w / d.pw), xc = 1 + 2 * d.c;
  Vec y(static_cast<size_t>(d.y_numel()));
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t p = 0; p < P; ++p) {
      Vec s(static_cast<size_t>(N));
      double top = -INFINITY, sum = 0;
      for (int64_t q = 0; q < N; ++q) top = std::max(top, x[at(d, n, xc, 0, p, q)]);
      for (int64_t q = 0; q < N; ++q) sum += s[static_cast<size_t>(q)] = std::exp(x[at(d, n, xc, 0, p, q)] - top);
      for (double& v : s) v /= sum;
      for (int64_t ch = 0; ch < d.c; ++ch) {
        double ctx = 0;
        for (int64_t q = 0; q < N; ++q) ctx += x[at(d, n, xc, 1 + ch, p, q)] * s[static_cast<size_t>(q)];
        for (int64_t q = 0; q < N; ++q)
          y[at(d, n, d.c, ch, p, q)] = std::max(x[at(d, n, xc, 1 + d.c + ch, p, q)], 0.0) * ctx;
      }
    }
  return y;
}

Vec separable_attention_backward(const SeparableAttentionDesc& d, const Vec& x, const Vec& dy) {
  const int64_t P = d.ph * d.pw, N = (d.h / d.ph) * (d.w / d.pw), xc = 1 + 2 * d.c;
  Vec dx(static_cast<size_t>(d.x_numel()), 0.0);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t p = 0; p < P; ++p) {
      Vec s(static_cast<size_t>(N)), ds(static_cast<size_t>(N), 0.0);
      double top = -INFINITY, sum = 0;
      for (int64_t q = 0; q < N; ++q) top = std::max(top, x[at(d, n, xc, 0, p, q)]);
      for (int64_t q = 0; q < N; ++q) sum += s[static_cast<size_t>(q)] = std::exp(x[at(d, n, xc, 0, p, q)] - top);
      for (double& v : s) v /= sum;
      for (int64_t ch = 0; ch < d.c; ++ch) {
        double ctx = 0, dctx = 0;
        for (int64_t q = 0; q < N; ++q) {
          const double k = x[at(d, n, xc, 1 + ch, p, q)], v = x[at(d, n, xc, 1 + d.c + ch, p, q)];
          ctx += k * s[static_cast<size_t>(q)];
          dctx += dy[at(d, n, d.c, ch, p, q)] * std::max(v, 0.0);
        }
        for (int64_t q = 0; q < N; ++q) {
          const double v = x[at(d, n, xc, 1 + d.c + ch, p, q)], g = dy[at(d, n, d.c, ch, p, q)];
          dx[at(d, n, xc, 1 + d.c + ch, p, q)] = v > 0 ? g * ctx : 0.0;
          dx[at(d, n, xc, 1 + ch, p, q)] = dctx * s[static_cast<size_t>(q)];
          ds[static_cast<size_t>(q)] += dctx * x[at(d, n, xc, 1 + ch, p, q)];
        }
      }
      // softmax's Jacobian: dq_q = s_q (ds_q - sum_r s_r ds_r)
      double mean = 0;
      for (int64_t q = 0; q < N; ++q) mean += s[static_cast<size_t>(q)] * ds[static_cast<size_t>(q)];
      for (int64_t q = 0; q < N; ++q)
        dx[at(d, n, xc, 0, p, q)] = s[static_cast<size_t>(q)] * (ds[static_cast<size_t>(q)] - mean);
    }
  return dx;
}

}  // namespace dlt::ref
