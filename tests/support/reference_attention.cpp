// Reference attention (reference_attention.h): one (image, head) pair at a time, in double.
#include "support/reference_attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "backend/dropout_hash.h"

namespace dlt::ref {

namespace {

// Element (b, t, h, c) of a token tensor (b, seq, heads * dim).
size_t at(const AttentionDesc& d, int64_t seq, int64_t dim, int64_t b, int64_t t, int64_t h, int64_t c) {
  return static_cast<size_t>(((b * seq + t) * d.heads + h) * dim + c);
}
size_t prob_at(const AttentionDesc& d, int64_t b, int64_t h, int64_t i, int64_t j) {
  return static_cast<size_t>(((b * d.heads + h) * d.seq_q + i) * d.seq_kv + j);
}
bool masked(const AttentionDesc& d, int64_t i, int64_t j) { return d.causal && j > i; }
// The dropout factor of probability e: 0 or 1 / (1 - p) (1 without dropout).
double keep(const AttentionDesc& d, bool dropout, uint64_t key, size_t e) {
  if (!dropout || d.dropout == 0.f) return 1.0;
  return dropout_uniform(key, e) >= d.dropout ? 1.0 / (1.0 - static_cast<double>(d.dropout)) : 0.0;
}

// The scores (n, heads, seq_q, seq_kv): scale <Q_i, K_j> plus the bias (the masked ones too).
Vec scores(const AttentionDesc& d, const Vec& q, const Vec& k, const Vec* bias) {
  const double scale = d.scale != 0.f ? d.scale : 1.0 / std::sqrt(static_cast<double>(d.key_dim));
  Vec s(static_cast<size_t>(d.probs_numel()), 0.0);
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t h = 0; h < d.heads; ++h)
      for (int64_t i = 0; i < d.seq_q; ++i)
        for (int64_t j = 0; j < d.seq_kv; ++j) {
          double x = 0;
          for (int64_t c = 0; c < d.key_dim; ++c)
            x += q[at(d, d.seq_q, d.key_dim, b, i, h, c)] * k[at(d, d.seq_kv, d.key_dim, b, j, h, c)];
          x *= scale;
          if (d.bias_n > 0) x += (*bias)[prob_at(d, b % d.bias_n, h, i, j)];
          s[prob_at(d, b, h, i, j)] = x;
        }
  return s;
}

// The bias of head g for pair e in mix m's bias (one value per head, or per head and pair).
double mix_bias_at(const AttentionDesc& d, const double* bias, int m, int64_t g, int64_t e) {
  return m == 1 && d.pair_probs_bias ? bias[g * d.seq_q * d.seq_kv + e] : bias[g];
}

// Mix m of the packed head mixes (0: the scores', 1: the probabilities'): y[g] = sum_h W[g, h]
// x[h] + b[g] per image and pair of tokens; transposed: y[h] = sum_g W[g, h] x[g], no bias.
Vec head_mix(const AttentionDesc& d, const Vec& x, const Vec& mix, int m, bool transposed) {
  const int64_t hh = d.heads, plane = d.seq_q * d.seq_kv;
  const double* w = mix.data() + m * (hh * hh + hh);
  const double* bias = w + hh * hh;
  Vec y(x.size(), 0.0);
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t g = 0; g < hh; ++g)
      for (int64_t e = 0; e < plane; ++e) {
        double sum = transposed ? 0.0 : mix_bias_at(d, bias, m, g, e);
        for (int64_t h = 0; h < hh; ++h)
          sum += (transposed ? w[h * hh + g] : w[g * hh + h]) * x[static_cast<size_t>((b * hh + h) * plane + e)];
        y[static_cast<size_t>((b * hh + g) * plane + e)] = sum;
      }
  return y;
}

// Mix m's gradients from its input x and its output's gradient dy into the packed dmix.
void head_mix_grad(const AttentionDesc& d, const Vec& x, const Vec& dy, int m, Vec& dmix) {
  const int64_t hh = d.heads, plane = d.seq_q * d.seq_kv;
  double* dw = dmix.data() + m * (hh * hh + hh);
  double* db = dw + hh * hh;
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t g = 0; g < hh; ++g)
      for (int64_t e = 0; e < plane; ++e) {
        const double gy = dy[static_cast<size_t>((b * hh + g) * plane + e)];
        db[m == 1 && d.pair_probs_bias ? g * plane + e : g] += gy;
        for (int64_t h = 0; h < hh; ++h) dw[g * hh + h] += gy * x[static_cast<size_t>((b * hh + h) * plane + e)];
      }
}

// Softmax over each row of the (masked) logits.
Vec softmax_rows(const AttentionDesc& d, Vec p) {
  for (int64_t r = 0; r < d.n * d.heads * d.seq_q; ++r) {
    const int64_t i = r % d.seq_q;
    double* row = p.data() + r * d.seq_kv;
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < d.seq_kv; ++j)
      if (!masked(d, i, j)) m = std::max(m, row[j]);
    for (int64_t j = 0; j < d.seq_kv; ++j) sum += row[j] = masked(d, i, j) ? 0.0 : std::exp(row[j] - m);
    for (int64_t j = 0; j < d.seq_kv; ++j) row[j] /= sum;
  }
  return p;
}

// The weights O reads (n, heads, seq_q, seq_kv): P, or with talking heads the mixed P (and P
// itself into probs; left empty without talking heads).
Vec attention_weights(const AttentionDesc& d, const Vec& q, const Vec& k, const Vec* bias, const Vec* mix, Vec* probs) {
  Vec s = scores(d, q, k, bias);
  if (d.talking_heads) s = head_mix(d, s, *mix, 0, false);
  Vec p = softmax_rows(d, std::move(s));
  if (!d.talking_heads) return p;
  Vec a = head_mix(d, p, *mix, 1, false);
  if (probs) *probs = std::move(p);
  return a;
}

}  // namespace

Vec attention_probs(const AttentionDesc& d, const Vec& q, const Vec& k, const Vec* bias, const Vec* mix) {
  Vec p;
  Vec a = attention_weights(d, q, k, bias, mix, &p);
  return d.talking_heads ? p : a;
}

Vec attention_forward(const AttentionDesc& d, const Vec& q, const Vec& k, const Vec& v, bool dropout, uint64_t key,
                      const Vec* bias, const Vec* mix) {
  const Vec p = attention_weights(d, q, k, bias, mix, nullptr);
  Vec o(static_cast<size_t>(d.o_numel()), 0.0);
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t h = 0; h < d.heads; ++h)
      for (int64_t i = 0; i < d.seq_q; ++i)
        for (int64_t c = 0; c < d.value_dim; ++c) {
          double s = 0;
          for (int64_t j = 0; j < d.seq_kv; ++j)
            s += p[prob_at(d, b, h, i, j)] * keep(d, dropout, key, prob_at(d, b, h, i, j)) *
                 v[at(d, d.seq_kv, d.value_dim, b, j, h, c)];
          o[at(d, d.seq_q, d.value_dim, b, i, h, c)] = s;
        }
  return o;
}

void attention_backward(const AttentionDesc& d, const Vec& q, const Vec& k, const Vec& v, const Vec& dout, Vec& dq,
                        Vec& dk, Vec& dv, bool dropout, uint64_t key, const Vec* bias, Vec* dbias, const Vec* mix,
                        Vec* dmix) {
  const double scale = d.scale != 0.f ? d.scale : 1.0 / std::sqrt(static_cast<double>(d.key_dim));
  Vec probs;
  const Vec a = attention_weights(d, q, k, bias, mix, &probs);  // what O reads: P, or the mixed P
  const Vec& p = d.talking_heads ? probs : a;
  if (dbias) dbias->assign(static_cast<size_t>(d.bias_numel()), 0.0);
  if (dmix) dmix->assign(static_cast<size_t>(2 * d.heads * d.heads + d.heads + d.mix_bias_numel(1)), 0.0);
  dq.assign(q.size(), 0.0);
  dk.assign(k.size(), 0.0);
  dv.assign(v.size(), 0.0);
  // dA_ij = M_ij <dO_i, V_j>; dV_j += A_ij M_ij dO_i (M: the dropout mask, else 1).
  Vec da(static_cast<size_t>(d.probs_numel()), 0.0);
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t h = 0; h < d.heads; ++h)
      for (int64_t i = 0; i < d.seq_q; ++i)
        for (int64_t j = 0; j < d.seq_kv; ++j) {
          const double m = keep(d, dropout, key, prob_at(d, b, h, i, j));
          const double aij = a[prob_at(d, b, h, i, j)] * m;
          double s = 0;
          for (int64_t c = 0; c < d.value_dim; ++c) {
            const double g = dout[at(d, d.seq_q, d.value_dim, b, i, h, c)];
            s += g * v[at(d, d.seq_kv, d.value_dim, b, j, h, c)];
            dv[at(d, d.seq_kv, d.value_dim, b, j, h, c)] += aij * g;
          }
          da[prob_at(d, b, h, i, j)] = s * m;
        }
  // Through the probabilities' mix: dP = Wp^T dA.
  if (d.talking_heads && dmix) head_mix_grad(d, p, da, 1, *dmix);
  Vec ds = d.talking_heads ? head_mix(d, da, *mix, 1, true) : std::move(da);
  // dL_ij = P_ij (dP_ij - sum_l P_il dP_il) (over dP), then through the scores' mix: dS = Ws^T dL.
  for (int64_t r = 0; r < d.n * d.heads * d.seq_q; ++r) {
    const double* pr = p.data() + r * d.seq_kv;
    double* g = ds.data() + r * d.seq_kv;
    double row = 0;
    for (int64_t j = 0; j < d.seq_kv; ++j) row += pr[j] * g[j];
    for (int64_t j = 0; j < d.seq_kv; ++j) g[j] = pr[j] * (g[j] - row);
  }
  if (d.talking_heads) {
    if (dmix) head_mix_grad(d, scores(d, q, k, bias), ds, 0, *dmix);
    ds = head_mix(d, ds, *mix, 0, true);
  }
  // The scores are scale * <Q_i, K_j> + B_ij.
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t h = 0; h < d.heads; ++h)
      for (int64_t i = 0; i < d.seq_q; ++i)
        for (int64_t j = 0; j < d.seq_kv; ++j) {
          const double dsb = ds[prob_at(d, b, h, i, j)];
          if (dbias) (*dbias)[prob_at(d, b % d.bias_n, h, i, j)] += dsb;
          const double g = dsb * scale;
          for (int64_t c = 0; c < d.key_dim; ++c) {
            dq[at(d, d.seq_q, d.key_dim, b, i, h, c)] += g * k[at(d, d.seq_kv, d.key_dim, b, j, h, c)];
            dk[at(d, d.seq_kv, d.key_dim, b, j, h, c)] += g * q[at(d, d.seq_q, d.key_dim, b, i, h, c)];
          }
        }
}

}  // namespace dlt::ref
