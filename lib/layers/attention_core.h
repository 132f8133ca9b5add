// The multi-head attention of selfAttention and windowAttention on rows of tokens: the query,
// key and value projections, the attention op (backend/attention_op.h) and the output
// projection, with MATLAB's learnables (selfAttentionLayer's names and shapes):
//   Q = x Wq' + bq, K = x Wk' + bk, V = x Wv' + bv   (key, key, value channels: the totals over
//   the heads, heads contiguous blocks), A = attention(Q, K, V) per sequence and head,
//   y = A Wo' + bo (out channels).
// Cosine (Swin V2's attention): Q and K normalized per head to unit length, Q times
// exp(min(t, log 100)) per head (t: the layer's LogitScale learnable), the scores unscaled
// (backend/token_ops.h's head normalize).
// Rotary (selfAttention's RotaryEmbedding): Q and K rotated in place after their projections
// (backend/token_ops.h's rotary), the attention's backward reading the rotated ones and its dQ
// and dK rotated back.
// The layer owns the learnables (Layer::params_): add_params appends the eight in the order
// QueryWeights, KeyWeights, ValueWeights, OutputWeights, QueryBias .. OutputBias, and the
// calls below take a pointer to the first.
// With AttentionSizes::query_input (GC ViT's global query) the queries are not projected: the
// layer writes them into query() before each forward and reads their gradient from
// query_grad() after each backward; there is no QueryWeights or QueryBias (six learnables:
// KeyWeights, ValueWeights, OutputWeights, KeyBias, ValueBias, OutputBias).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/attention_op.h"
#include "backend/backend.h"
#include "backend/token_ops.h"
#include "layers/layer.h"

namespace dlt {

// TalkingHeads true (dltrain's own option of selfAttention and attention; MATLAB's layers have
// none): CaiT's talking-heads attention, the scores mixed across the heads before the softmax
// and the probabilities after it (backend/attention_op.h), with four learnables appended to the
// layer's: ScoreMixWeights (NumHeads, NumHeads: output head, input head), ScoreMixBias
// (NumHeads), ProbabilityMixWeights, ProbabilityMixBias. The weights start as the identity and
// the biases at 0 (the layer starts as plain multi-head attention); each has its
// LearnRateFactor and L2Factor options (weights 1, biases 0 by default). With
// ProbabilityMixBiasPerPair true ProbabilityMixBias is (NumHeads, queries, keys): one value per
// head and pair of tokens added to the mixed weights (ConViT's gated positional attention, the
// positional weights times each head's gate).
class TalkingHeads {
 public:
  explicit TalkingHeads(const LayerSpec& spec);
  bool on() const { return on_; }
  bool pair_bias() const { return pairs_; }
  // Appends the four learnables (when on) for `heads` heads over seq_q queries and seq_kv keys.
  void add_params(std::vector<Param>& params, int64_t heads, int64_t seq_q, int64_t seq_kv) const;
  // The op's mixes from the four learnables from p, and their gradients (not frozen ones).
  void set(AttentionOp& op, const Param* p) const;
  HeadMixGrads grads(Param* p) const;
  // The four packed as OnnxGraph::attention's mix.
  static std::vector<float> packed(const Param* p);
  static std::vector<std::string> names();

 private:
  bool on_ = false, pairs_ = false;
  Param templates_[4];
};

// RotaryEmbedding interleaved / half (dltrain's own option of selfAttention; MATLAB's layers
// have none): rotary position embedding (RoPE; EVA-02's, LLaMA's) of the queries and keys after
// their projections (backend/token_ops.h's rotary: pairs (2i, 2i + 1) or (i, i + d / 2) of each
// head's d channels), the tokens before RotaryPrefixTokens (a class token) left as they are. The
// angles' cosines and sines are two states of the layer, RotaryCos and RotarySin (S -
// RotaryPrefixTokens, d / 2), saved with the model and not trained; a new layer fills them as
// RoFormer and LLaMA do, token t's pair i at t RotaryBase^(-2i / d) (RotaryBase 10000), or with
// RotaryGrid [H W] (the tokens a row-major H x W grid) axially: the first half of the pairs at
// row y, the second at column x, pair i of a half at y (or x) RotaryBase^(-i / (d / 4)). An
// imported network's are the file's. RotaryPerHead true: a table per head (NumHeads, S -
// RotaryPrefixTokens, d / 2; RoPE-Mixed's), each filled as the shared one.
class Rotary {
 public:
  explicit Rotary(const LayerSpec& spec);
  bool on() const { return on_; }
  bool half() const { return half_; }
  int64_t prefix() const { return prefix_; }
  bool per_head() const { return per_head_; }
  // Appends the two states (when on) for seq tokens and `heads` heads of key_dim channels;
  // throws ConfigError where they do not fit.
  void add_states(std::vector<State>& states, const LayerSpec& spec, int64_t seq, int64_t heads, int64_t key_dim) const;
  // The default angles' cosines and sines into the two states s[0], s[1].
  void fill(State* s) const;

 private:
  bool on_ = false, half_ = false, per_head_ = false;
  int64_t prefix_ = 0;
  double base_ = 10000;
  std::vector<int64_t> grid_;
};

struct AttentionSizes {
  int64_t heads = 1, key = 1, value = 1, out = 1, c = 1;  // c: the input's channels
  bool query_input = false;                               // the queries given (query()), not projected from the input
};

class AttentionCore {
 public:
  // Appends the eight learnables (six with query_input), copies of the Weight and Bias templates (their initializers
  // and factors) with MATLAB's names, shapes and fans.
  static void add_params(std::vector<Param>& params, const Param& weight, const Param& bias, const AttentionSizes& s);
  // How many add_params appends: 8, or 6 with query_input.
  static int param_count(const AttentionSizes& s) { return s.query_input ? 6 : 8; }

  // `sequences` sequences of `seq` tokens; bias_n as AttentionDesc's (0: none).
  void setup(Backend& be, const AttentionSizes& s, int64_t sequences, int64_t seq, bool causal, float dropout,
             int64_t bias_n, bool mixed, bool cosine = false, const TalkingHeads* talking = nullptr,
             const Rotary* rotary = nullptr);
  AttentionOp& attention() { return *attention_; }
  // With query_input: the queries (rows, key) the next forward reads, written by the layer, and
  // after a backward their gradient (rows, key).
  Tensor& query() { return act_[0]; }
  const Tensor& query_grad() const { return grad_[0]; }
  // The rotary embedding's tables (a setup with rotary on): read by every forward and backward
  // until set again (the tensors must outlive them).
  void set_rotary(const Tensor& cos, const Tensor& sin) {
    rot_cos_ = &cos;
    rot_sin_ = &sin;
  }
  // y (rows, out) from x (rows, c); dropout_key: the training forward's mask (0: no dropout).
  // logit: the cosine attention's LogitScale (required with cosine, else ignored).
  void forward(const Tensor& x, Tensor& y, Param* params, bool dropout, uint64_t dropout_key,
               const Param* logit = nullptr);
  // The learnables' gradients and dx (null: not wanted) from dy (its storage is reused); dbias
  // (null: none) the attention bias's gradient, dmix (null: none) the talking heads'.
  void backward(const Tensor& x, Tensor& dy, Tensor* dx, Param* params, Tensor* dbias, Param* logit = nullptr,
                const HeadMixGrads* dmix = nullptr);
  // Multiply-adds x 2 per sequence of seq tokens.
  static int64_t flops(const AttentionSizes& s, int64_t seq) {
    const int64_t projected = (s.query_input ? 1 : 2) * s.key + s.value;  // Q (unless given), K, V
    return 2 * seq * (s.c * projected + s.value * s.out) + 2 * seq * seq * (s.key + s.value);
  }

 private:
  void update_grads(int i, const Tensor& in, const Tensor& g, Param* params);
  // Projection i's (0 Q, 1 K, 2 V, 3 output) weights and bias in add_params's order.
  Param& weight(Param* p, int i) const { return p[query_input_ ? i - 1 : i]; }
  Param& bias(Param* p, int i) const { return p[query_input_ ? 2 + i : 4 + i]; }
  // The first projection computed here: K with query_input, else Q.
  int first() const { return query_input_ ? 1 : 0; }

  Backend* be_ = nullptr;
  bool query_input_ = false;
  std::unique_ptr<FcOp> fc_[4];  // Q, K, V, output projections
  std::unique_ptr<AttentionOp> attention_;
  std::unique_ptr<HeadNormalizeOp> norm_[2];  // cosine: Q (with the logit scale) and K
  std::unique_ptr<RotaryOp> rotary_;          // rotary: Q and K rotated in place
  const Tensor *rot_cos_ = nullptr, *rot_sin_ = nullptr;
  Tensor unit_[2];                            // cosine: the normalized Q and K the attention reads
  Tensor act_[4];   // Q, K, V, A = attention(Q, K, V) (rows, channels), kept for backward
  Tensor grad_[4];  // their gradients (dK, dV, dA in K's, V's, A's storage)
  Tensor dx_part_;  // one projection's share of dx (in A's storage when it has dx's size)
};

}  // namespace dlt
