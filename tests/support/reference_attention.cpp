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

}  // namespace

Vec attention_probs(const AttentionDesc& d, const Vec& q, const Vec& k, const Vec* bias) {
  const double scale = d.scale != 0.f ? d.scale : 1.0 / std::sqrt(static_cast<double>(d.key_dim));
  Vec p(static_cast<size_t>(d.probs_numel()), 0.0);
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t h = 0; h < d.heads; ++h)
      for (int64_t i = 0; i < d.seq_q; ++i) {
        double m = -INFINITY;
        for (int64_t j = 0; j < d.seq_kv; ++j) {
          if (masked(d, i, j)) continue;
          double s = 0;
          for (int64_t c = 0; c < d.key_dim; ++c)
            s += q[at(d, d.seq_q, d.key_dim, b, i, h, c)] * k[at(d, d.seq_kv, d.key_dim, b, j, h, c)];
          s *= scale;
          if (d.bias_n > 0) s += (*bias)[prob_at(d, b % d.bias_n, h, i, j)];
          p[prob_at(d, b, h, i, j)] = s;
          m = std::max(m, s);
        }
        double sum = 0;
        for (int64_t j = 0; j < d.seq_kv; ++j)
          if (!masked(d, i, j)) sum += p[prob_at(d, b, h, i, j)] = std::exp(p[prob_at(d, b, h, i, j)] - m);
        for (int64_t j = 0; j < d.seq_kv; ++j) p[prob_at(d, b, h, i, j)] /= sum;
      }
  return p;
}

Vec attention_forward(const AttentionDesc& d, const Vec& q, const Vec& k, const Vec& v, bool dropout, uint64_t key,
                      const Vec* bias) {
  const Vec p = attention_probs(d, q, k, bias);
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
                        Vec& dk, Vec& dv, bool dropout, uint64_t key, const Vec* bias, Vec* dbias) {
  const double scale = d.scale != 0.f ? d.scale : 1.0 / std::sqrt(static_cast<double>(d.key_dim));
  const Vec p = attention_probs(d, q, k, bias);
  if (dbias) dbias->assign(static_cast<size_t>(d.bias_numel()), 0.0);
  dq.assign(q.size(), 0.0);
  dk.assign(k.size(), 0.0);
  dv.assign(v.size(), 0.0);
  Vec dp(static_cast<size_t>(d.seq_kv));
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t h = 0; h < d.heads; ++h)
      for (int64_t i = 0; i < d.seq_q; ++i) {
        // dP_ij = M_ij <dO_i, V_j>; dV_j += P_ij M_ij dO_i (M: the dropout mask, else 1).
        for (int64_t j = 0; j < d.seq_kv; ++j) {
          const double m = keep(d, dropout, key, prob_at(d, b, h, i, j));
          const double pij = p[prob_at(d, b, h, i, j)] * m;
          double s = 0;
          for (int64_t c = 0; c < d.value_dim; ++c) {
            const double g = dout[at(d, d.seq_q, d.value_dim, b, i, h, c)];
            s += g * v[at(d, d.seq_kv, d.value_dim, b, j, h, c)];
            dv[at(d, d.seq_kv, d.value_dim, b, j, h, c)] += pij * g;
          }
          dp[static_cast<size_t>(j)] = s * m;
        }
        // dS_ij = P_ij (dP_ij - sum_l P_il dP_il); the scores are scale * <Q_i, K_j> + B_ij.
        double row = 0;
        for (int64_t j = 0; j < d.seq_kv; ++j) row += p[prob_at(d, b, h, i, j)] * dp[static_cast<size_t>(j)];
        for (int64_t j = 0; j < d.seq_kv; ++j) {
          const double dsb = p[prob_at(d, b, h, i, j)] * (dp[static_cast<size_t>(j)] - row);
          if (dbias) (*dbias)[prob_at(d, b % d.bias_n, h, i, j)] += dsb;
          const double ds = dsb * scale;
          for (int64_t c = 0; c < d.key_dim; ++c) {
            dq[at(d, d.seq_q, d.key_dim, b, i, h, c)] += ds * k[at(d, d.seq_kv, d.key_dim, b, j, h, c)];
            dk[at(d, d.seq_kv, d.key_dim, b, j, h, c)] += ds * q[at(d, d.seq_q, d.key_dim, b, i, h, c)];
          }
        }
      }
}

}  // namespace dlt::ref
