// The reference ReLU linear attention (reference_ops.h), as timm's LiteMLA computes it: per
// image and head, q = relu(Q), k = relu(K), v' = [V 1], kv = k^T v', out = q kv, y = out[:, :d] /
// (out[:, d] + eps); the backward by the chain rule through the same matrices. Double precision
// throughout.
#include <algorithm>

#include "support/reference_ops.h"

namespace dlt::ref {

namespace {

// The matrices of image n, head j: q, k (s x d), v' (s x (d + 1)).
struct Head {
  int64_t s, d;
  Vec q, k, vp;
  Head(const LinearAttentionDesc& a, const Vec& x, int64_t n, int64_t j) : s(a.s), d(a.d) {
    q.assign(static_cast<size_t>(s * d), 0.0);
    k = q;
    vp.assign(static_cast<size_t>(s * (d + 1)), 1.0);
    const int64_t c = a.heads * 3 * d;
    for (int64_t p = 0; p < s; ++p)
      for (int64_t i = 0; i < d; ++i) {
        const size_t base = static_cast<size_t>((n * s + p) * c + j * 3 * d + i);
        q[static_cast<size_t>(p * d + i)] = std::max(x[base], 0.0);
        k[static_cast<size_t>(p * d + i)] = std::max(x[base + static_cast<size_t>(d)], 0.0);
        vp[static_cast<size_t>(p * (d + 1) + i)] = x[base + static_cast<size_t>(2 * d)];
      }
  }
  // kv = k^T v' (d x (d + 1))
  Vec kv() const {
    Vec out(static_cast<size_t>(d * (d + 1)), 0.0);
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j <= d; ++j)
        for (int64_t p = 0; p < s; ++p)
          out[static_cast<size_t>(i * (d + 1) + j)] +=
              k[static_cast<size_t>(p * d + i)] * vp[static_cast<size_t>(p * (d + 1) + j)];
    return out;
  }
  // out = q kv (s x (d + 1))
  Vec out(const Vec& kv) const {
    Vec o(static_cast<size_t>(s * (d + 1)), 0.0);
    for (int64_t p = 0; p < s; ++p)
      for (int64_t j = 0; j <= d; ++j)
        for (int64_t i = 0; i < d; ++i)
          o[static_cast<size_t>(p * (d + 1) + j)] +=
              q[static_cast<size_t>(p * d + i)] * kv[static_cast<size_t>(i * (d + 1) + j)];
    return o;
  }
};

size_t y_at(const LinearAttentionDesc& a, int64_t n, int64_t p, int64_t j, int64_t i) {
  return static_cast<size_t>((n * a.s + p) * a.heads * a.d + j * a.d + i);
}

}  // namespace

Vec linear_attention_forward(const LinearAttentionDesc& a, const Vec& x) {
  Vec y(static_cast<size_t>(a.y_numel()));
  for (int64_t n = 0; n < a.n; ++n)
    for (int64_t j = 0; j < a.heads; ++j) {
      const Head h(a, x, n, j);
      const Vec o = h.out(h.kv());
      for (int64_t p = 0; p < a.s; ++p) {
        const double den = o[static_cast<size_t>(p * (a.d + 1) + a.d)] + a.eps;
        for (int64_t i = 0; i < a.d; ++i) y[y_at(a, n, p, j, i)] = o[static_cast<size_t>(p * (a.d + 1) + i)] / den;
      }
    }
  return y;
}

Vec linear_attention_backward(const LinearAttentionDesc& a, const Vec& x, const Vec& dy) {
  Vec dx(static_cast<size_t>(a.x_numel()), 0.0);
  const int64_t s = a.s, d = a.d, c = a.heads * 3 * d;
  for (int64_t n = 0; n < a.n; ++n)
    for (int64_t j = 0; j < a.heads; ++j) {
      const Head h(a, x, n, j);
      const Vec kv = h.kv(), o = h.out(kv);
      // do: the gradient of out (s x (d + 1)) through the division
      Vec dout(static_cast<size_t>(s * (d + 1)), 0.0);
      for (int64_t p = 0; p < s; ++p) {
        const double den = o[static_cast<size_t>(p * (d + 1) + d)] + a.eps;
        double last = 0;
        for (int64_t i = 0; i < d; ++i) {
          const double g = dy[y_at(a, n, p, j, i)];
          dout[static_cast<size_t>(p * (d + 1) + i)] = g / den;
          last -= g * o[static_cast<size_t>(p * (d + 1) + i)] / (den * den);
        }
        dout[static_cast<size_t>(p * (d + 1) + d)] = last;
      }
      // dkv = q^T dout; dq = dout kv^T
      Vec dkv(static_cast<size_t>(d * (d + 1)), 0.0);
      for (int64_t p = 0; p < s; ++p)
        for (int64_t i = 0; i < d; ++i)
          for (int64_t m = 0; m <= d; ++m) {
            const double g = dout[static_cast<size_t>(p * (d + 1) + m)];
            dkv[static_cast<size_t>(i * (d + 1) + m)] += h.q[static_cast<size_t>(p * d + i)] * g;
            const size_t at = static_cast<size_t>((n * s + p) * c + j * 3 * d + i);
            if (x[at] > 0) dx[at] += g * kv[static_cast<size_t>(i * (d + 1) + m)];
          }
      // dk = v' dkv^T (through the ReLU); dv = k dkv (its first d columns)
      for (int64_t p = 0; p < s; ++p)
        for (int64_t i = 0; i < d; ++i) {
          const size_t at = static_cast<size_t>((n * s + p) * c + j * 3 * d + i);
          double gk = 0, gv = 0;
          for (int64_t m = 0; m <= d; ++m)
            gk += h.vp[static_cast<size_t>(p * (d + 1) + m)] * dkv[static_cast<size_t>(i * (d + 1) + m)];
          for (int64_t m = 0; m < d; ++m)
            gv += h.k[static_cast<size_t>(p * d + m)] * dkv[static_cast<size_t>(m * (d + 1) + i)];
          if (x[at + static_cast<size_t>(d)] > 0) dx[at + static_cast<size_t>(d)] = gk;
          dx[at + static_cast<size_t>(2 * d)] = gv;
        }
    }
  return dx;
}

}  // namespace dlt::ref
