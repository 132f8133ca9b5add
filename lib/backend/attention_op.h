// Scaled dot-product attention (MATLAB's selfAttentionLayer without its projections; PyTorch's
// MultiheadAttention between its in- and out-projections) on already-projected queries, keys
// and values. Token sequences are NHWC tensors (n, seq, 1, channels): MATLAB's SCB layout, the
// same memory as (n, seq, channels). Heads are contiguous channel blocks: head h of Q is
// channels [h * key_dim, (h + 1) * key_dim), as in PyTorch and MATLAB. Per image and head,
//   S = scale * Q_h K_h^T (seq_q x seq_kv),  P = softmax over each row of S (masked entries -inf),
//   O_h = P V_h (seq_q x value_dim),
// with Q (n, seq_q, heads * key_dim), K (n, seq_kv, heads * key_dim), V (n, seq_kv,
// heads * value_dim) and O (n, seq_q, heads * value_dim). causal masks key j for query i when
// j > i (MATLAB's AttentionMask "causal"; PyTorch's is_causal, top-left aligned when
// seq_q != seq_kv: every query sees key 0, so no row is empty).
// With bias_n > 0 an additive bias B (bias_n, heads, seq_q, seq_kv) joins the scores before the
// mask and softmax: S = scale * Q_h K_h^T + B[b % bias_n, h] for batch entry b (Swin's relative
// position bias, bias_n 1, or that bias plus the shifted windows' mask, bias_n = the windows of
// an image with images' windows consecutive in the batch); its gradient dB sums the scores'
// gradients over the batch entries that share each entry.
// With talking_heads (CaiT's talking-heads attention) the scores are mixed across the heads
// before the softmax and the probabilities after it, per image and pair of tokens (i, j):
//   L[g] = sum_h Ws[g, h] S[h] + bs[g],   P = softmax over each row of L (masked entries -inf),
//   A[g] = sum_h Wp[g, h] P[h] + bp[g],   O_g = A_g V_g,
// with S the scaled (and biased) scores, Ws, Wp (heads, heads) as PyTorch's Linear weights
// (output head, input head) and bs, bp (heads) (set_head_mix); dropout then drops entries of A.
// With pair_probs_bias bp is one value per head and pair of tokens, (heads, seq_q, seq_kv), the
// same for every image: A[g] = sum_h Wp[g, h] P[h] + bp[g] (ConViT's gated positional attention:
// Wp diagonal, bp each head's positional weights times its gate).
// The backward gives their gradients too (HeadMixGrads).
// The backward gives dQ, dK and dV from dO (written, not accumulated) from the inputs of the
// last forward of the same op: a kernel keeps the probabilities P (n * heads * seq_q * seq_kv
// floats) from that forward where they fit its budget, and computes them again otherwise
// (cpu/attention_op.cpp). An op of the registry (op_registry.h): each backend registers its
// kernel in its own file.
#pragma once
#include <cmath>
#include <cstdint>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt {

class AttentionOp;

// The talking heads' mixes' gradients (written, not accumulated); a null one is not computed.
// [0]: the scores' mix before the softmax, [1]: the probabilities' after it.
struct HeadMixGrads {
  Tensor* weights[2] = {nullptr, nullptr};  // (heads, heads)
  Tensor* bias[2] = {nullptr, nullptr};     // (heads)
};

struct AttentionDesc {
  using Op = AttentionOp;
  static constexpr const char* kOp = "attention";
  int64_t n = 1;          // batch
  int64_t heads = 1;      // number of heads
  int64_t seq_q = 1;      // query tokens
  int64_t seq_kv = 1;     // key and value tokens
  int64_t key_dim = 1;    // per head (queries and keys)
  int64_t value_dim = 1;  // per head (values and output)
  bool causal = false;    // mask key j > query i
  float scale = 0.f;      // 0: 1 / sqrt(key_dim)
  // Dropout on the probabilities in forward_dropout: P[e] is kept with probability 1 - dropout
  // and scaled by 1 / (1 - dropout), where dropout_uniform(key, e) >= dropout (dropout_hash.h;
  // e the index in (n, heads, seq_q, seq_kv)): the same mask on every backend. O = (P * M) V.
  float dropout = 0.f;
  int64_t bias_n = 0;  // 0: no additive bias; else B (bias_n, heads, seq_q, seq_kv), set_bias
  bool talking_heads = false;  // mix the scores and the probabilities across heads (set_head_mix)
  bool pair_probs_bias = false;  // talking heads: the probabilities' mix bias (heads, seq_q, seq_kv)
  float scale_or_default() const { return scale != 0.f ? scale : 1.f / std::sqrt(static_cast<float>(key_dim)); }
  int64_t q_numel() const { return n * seq_q * heads * key_dim; }
  int64_t k_numel() const { return n * seq_kv * heads * key_dim; }
  int64_t v_numel() const { return n * seq_kv * heads * value_dim; }
  int64_t o_numel() const { return n * seq_q * heads * value_dim; }
  int64_t probs_numel() const { return n * heads * seq_q * seq_kv; }
  int64_t bias_numel() const { return bias_n * heads * seq_q * seq_kv; }
  // The head mixes' biases: the scores' (0) and the probabilities' (1).
  int64_t mix_bias_numel(int m) const { return m == 1 && pair_probs_bias ? heads * seq_q * seq_kv : heads; }
};

// Tensors of the descriptor's sizes (any shape of that many values), on the op's device.
class AttentionOp {
 public:
  virtual ~AttentionOp() = default;
  // o from q, k, v, without dropout (inference, or dropout 0).
  void forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o) { run_forward(q, k, v, o, false, 0); }
  // A training forward with the descriptor's dropout on the probabilities, its mask drawn from
  // key; the backward that follows applies the same mask.
  void forward_dropout(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o, uint64_t key) {
    DLT_CHECK(desc_.dropout > 0.f, "attention: forward_dropout without a dropout probability");
    run_forward(q, k, v, o, true, key);
  }
  // The additive bias (desc().bias_n > 0): read by every forward and backward until set again
  // (the tensor must outlive them).
  void set_bias(const Tensor& bias) {
    DLT_CHECK(desc_.bias_n > 0, "attention: set_bias on an op without bias (bias_n 0)");
    check(bias, desc_.bias_numel(), "bias");
    bias_ = &bias;
  }
  // The talking heads' mixes (desc().talking_heads): scores_weights and probs_weights (heads,
  // heads), scores_bias and probs_bias (desc().mix_bias_numel(0 / 1) values); read by every
  // forward and backward until set again (the tensors must outlive them).
  void set_head_mix(const Tensor& scores_weights, const Tensor& scores_bias, const Tensor& probs_weights,
                    const Tensor& probs_bias) {
    DLT_CHECK(desc_.talking_heads, "attention: set_head_mix on an op without talking heads");
    const Tensor* t[4] = {&scores_weights, &scores_bias, &probs_weights, &probs_bias};
    for (int i = 0; i < 4; ++i) {
      check(*t[i], i % 2 ? desc_.mix_bias_numel(i / 2) : desc_.heads * desc_.heads,
            i % 2 ? "a head mix's bias" : "a head mix");
      mix_[i] = t[i];
    }
  }
  // dq, dk, dv from dout (the gradient of o) and the inputs of the last forward; dbias (written,
  // not accumulated) when not null, the bias's gradient; dmix (when not null) the head mixes'.
  // dk may be k's storage and dv v's (the kernels read each before writing its gradient over
  // it): the caller saves two buffers.
  void backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout, Tensor& dq, Tensor& dk,
                Tensor& dv, Tensor* dbias = nullptr, const HeadMixGrads* dmix = nullptr) {
    DLT_CHECK(forward_done_, "attention: backward before any forward (it reads the forward's probabilities)");
    if (dbias) {
      DLT_CHECK(desc_.bias_n > 0, "attention: a bias gradient asked of an op without bias");
      check(*dbias, desc_.bias_numel(), "dB");
    }
    if (dmix) {
      DLT_CHECK(desc_.talking_heads, "attention: head mix gradients asked of an op without talking heads");
      for (int i = 0; i < 2; ++i) {
        if (dmix->weights[i]) check(*dmix->weights[i], desc_.heads * desc_.heads, "a head mix's gradient");
        if (dmix->bias[i]) check(*dmix->bias[i], desc_.mix_bias_numel(i), "a head mix bias's gradient");
      }
    }
    check(q, desc_.q_numel(), "q");
    check(k, desc_.k_numel(), "k");
    check(v, desc_.v_numel(), "v");
    check(dout, desc_.o_numel(), "dO");
    check(dq, desc_.q_numel(), "dQ");
    check(dk, desc_.k_numel(), "dK");
    check(dv, desc_.v_numel(), "dV");
    do_backward(q, k, v, dout, dq, dk, dv, dbias, dmix && desc_.talking_heads ? *dmix : HeadMixGrads{});
  }
  const AttentionDesc& desc() const { return desc_; }

 protected:
  AttentionOp(const AttentionDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.n >= 1 && d.heads >= 1 && d.seq_q >= 1 && d.seq_kv >= 1 && d.key_dim >= 1 && d.value_dim >= 1,
              "attention: every size must be at least 1 (n " << d.n << ", heads " << d.heads << ", seq_q " << d.seq_q
                                                             << ", seq_kv " << d.seq_kv << ", key_dim " << d.key_dim
                                                             << ", value_dim " << d.value_dim << ")");
    DLT_CHECK(std::isfinite(d.scale), "attention: scale " << d.scale << " is not finite");
    DLT_CHECK(d.dropout >= 0.f && d.dropout < 1.f, "attention: dropout " << d.dropout << " is not in [0, 1)");
    DLT_CHECK(d.bias_n >= 0, "attention: bias_n " << d.bias_n << " is negative");
    DLT_CHECK(!d.pair_probs_bias || d.talking_heads, "attention: pair_probs_bias without talking heads");
  }
  // dropout: apply the mask of `key` (forward_dropout); the backward after it reads dropout_on().
  virtual void do_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o) = 0;
  bool dropout_on() const { return dropout_on_; }
  uint64_t dropout_key() const { return dropout_key_; }
  float keep_scale() const { return 1.f / (1.f - desc_.dropout); }
  // The bias set by set_bias (null without bias).
  const Tensor* bias() const { return bias_; }
  // The head mixes set by set_head_mix: scores' weights, bias, probabilities' weights, bias.
  const Tensor& mix(int i) const { return *mix_[i]; }
  virtual void do_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout, Tensor& dq,
                           Tensor& dk, Tensor& dv, Tensor* dbias, const HeadMixGrads& dmix) = 0;

 private:
  void run_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o, bool dropout, uint64_t key) {
    check(q, desc_.q_numel(), "q");
    check(k, desc_.k_numel(), "k");
    check(v, desc_.v_numel(), "v");
    check(o, desc_.o_numel(), "o");
    DLT_CHECK(desc_.bias_n == 0 || bias_, "attention: forward before set_bias (bias_n " << desc_.bias_n << ")");
    DLT_CHECK(!desc_.talking_heads || mix_[0], "attention: forward before set_head_mix (talking heads)");
    dropout_on_ = dropout;
    dropout_key_ = key;
    do_forward(q, k, v, o);
    forward_done_ = true;
  }
  void check(const Tensor& t, int64_t numel, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "attention: " << what << " must be " << numel << " values on " << device_.str() << " (got "
                            << (t.defined() ? t.numel() : 0) << ")");
  }
  AttentionDesc desc_;
  Device device_;
  const Tensor* bias_ = nullptr;
  const Tensor* mix_[4] = {nullptr, nullptr, nullptr, nullptr};
  bool forward_done_ = false;
  bool dropout_on_ = false;
  uint64_t dropout_key_ = 0;
};

}  // namespace dlt
