// The double-precision reference of the attention op (backend/attention_op.h): per image and
// head, softmax(scale Q K^T, masked) V written out with plain loops, and its backward through
// the softmax. Q, K, V, O are token tensors (n, seq, heads * dim), heads as channel blocks.
// With d.talking_heads, mix (not null) holds the head mixes packed: the scores' weights (heads,
// heads), their bias (heads), the probabilities' weights and bias (heads, or with
// d.pair_probs_bias (heads, seq_q, seq_kv)); its gradient dmix likewise.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/attention_op.h"

namespace dlt::ref {

using Vec = std::vector<double>;

// The probabilities (n, heads, seq_q, seq_kv): softmax over each row of the masked scores, with
// the additive bias (bias_n, heads, seq_q, seq_kv) where d.bias_n > 0 (bias then not null).
// With talking heads: the softmax of the mixed scores (before the second mix).
Vec attention_probs(const AttentionDesc& d, const Vec& q, const Vec& k, const Vec* bias = nullptr,
                    const Vec* mix = nullptr);
// O (n, seq_q, heads * value_dim). With d.dropout > 0 and dropout: the probabilities times
// forward_dropout's mask of key (backend/attention_op.h).
Vec attention_forward(const AttentionDesc& d, const Vec& q, const Vec& k, const Vec& v, bool dropout = false,
                      uint64_t key = 0, const Vec* bias = nullptr, const Vec* mix = nullptr);
// dQ, dK, dV from dO (written, not accumulated), through the same mask; dbias (when not null)
// the bias's gradient.
void attention_backward(const AttentionDesc& d, const Vec& q, const Vec& k, const Vec& v, const Vec& dout, Vec& dq,
                        Vec& dk, Vec& dv, bool dropout = false, uint64_t key = 0, const Vec* bias = nullptr,
                        Vec* dbias = nullptr, const Vec* mix = nullptr, Vec* dmix = nullptr);

}  // namespace dlt::ref
