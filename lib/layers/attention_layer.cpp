// attention: MATLAB's attentionLayer (R2024a), multi-head scaled dot-product attention on
// queries, keys and values that are already projected, each a token sequence (SCB) of its own:
// Inputs [query, key, value] (MATLAB's input names), query (Sq, 1, Ck), key (Skv, 1, Ck),
// value (Skv, 1, Cv); output (Sq, 1, Cv). Per image and head h (channels [h Ck / NumHeads,
// (h + 1) Ck / NumHeads) of Q and K, likewise of V):
//   A_h = softmax(Scale * Q_h K_h^T) V_h,   Scale "auto" = 1 / sqrt(Ck / NumHeads),
// AttentionMask causal hiding key j from query i when j > i (top-left aligned when Sq != Skv),
// DropoutProbability dropping attention weights in training (the others scaled by 1 / (1 - p)).
// The keys and values may come from another sequence than the queries (cross-attention: a
// decoder's queries over an encoder's tokens, PVT's queries over a subsampled image) or from
// the same one (selfAttention is this layer between four fullyConnected projections). No
// learnables. The op is backend/attention_op.h's. PyTorch: F.scaled_dot_product_attention on the
// heads (N, NumHeads, S, C / NumHeads). MATLAB's HasPaddingMaskInput and HasScoresOutput are
// refused when true: dltrain's sequences have no padding and a layer has one output.
// ScoreBias true (dltrain's own, as selfAttention's) adds a learnable ScoreBias (NumHeads, Sq,
// Skv) to each head's scaled scores before the mask and softmax, the same for every image:
// LeViT's attention biases, gathered from its table into one value per head and pair of tokens.
// TalkingHeads true (dltrain's own, as selfAttention's; attention_core.h): CaiT's talking heads,
// the scores and the probabilities mixed across the heads by learnable (NumHeads, NumHeads)
// weights and biases; the ScoreBias joins the scores before their mix, the mask after it.
// Images (SSCB) are taken too (dltrain's own): an image's pixels in row order are its tokens
// (the same memory as (H W, 1, C)); the output has the query's format, an Hq x Wq x Cv image
// for an image query (PVT's queries over the pixels of a strided convolution's output). A vector
// (CB) is one token (CaiT's and XCiT's class attention: the class token's query alone); a
// vector query gives a sequence of one token.
#include <cmath>
#include <memory>
#include <string>

#include "backend/attention_op.h"
#include "layers/attention_core.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

class AttentionLayer final : public Layer {
 public:
  explicit AttentionLayer(const LayerSpec& spec) : Layer(spec), talking_(spec_) {
    heads_ = num_heads_option(spec_);
    scale_ = scale_option(spec_, "key");
    causal_ = spec_.get_choice("AttentionMask", "none", {"none", "causal"}) == "causal";
    dropout_ = spec_.get_double("DropoutProbability", 0.0);
    if (dropout_ < 0 || dropout_ >= 1)
      throw ConfigError(spec.where() + "option DropoutProbability must be in [0, 1), got " + std::to_string(dropout_));
    if (spec_.get_bool("HasPaddingMaskInput", false))
      throw ConfigError(spec.where() +
                        "option HasPaddingMaskInput true is not supported: dltrain's token sequences have "
                        "no padding (every sequence of a batch has the same length)");
    if (spec_.get_bool("HasScoresOutput", false))
      throw ConfigError(spec.where() + "option HasScoresOutput true is not supported: a dltrain layer has one output");
    score_bias_ = spec_.get_bool("ScoreBias", false);
    if (score_bias_) scores_ = make_param(spec_, "ScoreBias", Shape{}, Init::kZeros, 0.f);
  }

  int num_inputs() const override { return 3; }
  bool takes(DataFormat f) const override {
    return f == DataFormat::kSCB || f == DataFormat::kSSCB || f == DataFormat::kCB;
  }
  DataFormat output_format() const override {
    return input_format(0) == DataFormat::kCB ? DataFormat::kSCB : input_format(0);
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 3);
    const Shape &q = inputs[0], &k = inputs[1], &v = inputs[2];
    seq_q_ = q[0] * q[1];
    seq_kv_ = k[0] * k[1];
    key_ = q[2];
    value_ = v[2];
    if (k[2] != key_)
      shape_error(spec_, "the key has " + std::to_string(k[2]) + " channels and the query " + std::to_string(key_) +
                             " (Inputs [query, key, value]: queries and keys must have the same channels)");
    if (v[0] * v[1] != seq_kv_)
      shape_error(spec_, "the value has " + std::to_string(v[0] * v[1]) + " tokens and the key " +
                             std::to_string(seq_kv_) + " (Inputs [query, key, value]: a value per key)");
    for (auto [what, n] : {std::pair<const char*, int64_t>{"query and key", key_}, {"value", value_}})
      if (n % heads_ != 0)
        shape_error(spec_, std::string("the ") + what + " channels (" + std::to_string(n) +
                               ") are not a multiple of NumHeads (" + std::to_string(heads_) + ")");
    params_.clear();
    if (score_bias_) {
      Param b = scores_;
      b.shape = Shape{heads_, seq_q_, seq_kv_};
      b.fan_in = b.fan_out = seq_kv_;
      params_.push_back(b);
    }
    talking_.add_params(params_, heads_, seq_q_, seq_kv_);
    return Shape{q[0], q[1], value_};
  }

  void setup(int64_t n, Backend& be) override { op_ = be.make(desc(n)); }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    if (score_bias_) op_->set_bias(params_[0].value);
    if (talking_.on()) talking_.set(*op_, mix_params());
    if (ctx.training && dropout_ > 0)
      op_->forward_dropout(*x[0], *x[1], *x[2], y,
                           Rng::derive(ctx.seed, {dropout_stream(name(), ctx.iteration)}).next_u64());
    else
      op_->forward(*x[0], *x[1], *x[2], y);
  }

  // The op writes all three gradients: an input that needs none gets a scratch buffer.
  void backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    Tensor* dbias = score_bias_ && !params_[0].frozen() ? &params_[0].grad : nullptr;
    const HeadMixGrads dmix = talking_.on() ? talking_.grads(mix_params()) : HeadMixGrads{};
    op_->backward(*x[0], *x[1], *x[2], dy, grad_or_scratch(dx[0], *x[0], scratch_[0]),
                  grad_or_scratch(dx[1], *x[1], scratch_[1]), grad_or_scratch(dx[2], *x[2], scratch_[2]), dbias,
                  talking_.on() ? &dmix : nullptr);
  }
  std::vector<std::string> learnable_options() const override {
    std::vector<std::string> names;
    if (score_bias_) names.push_back("ScoreBias");
    if (talking_.on())
      for (const std::string& m : TalkingHeads::names()) names.push_back(m);
    return names;
  }

  int64_t flops_per_image() const override { return 2 * seq_q_ * seq_kv_ * (key_ + value_); }
  bool stochastic() const override { return dropout_ > 0; }

  // OnnxGraph::attention: selfAttention's form without its projections (images' pixels made
  // tokens first; an image query's output made an image again).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const bool image = !inputs.at(0).tokens && !inputs[0].flat;
    const std::string y = image ? n + "_tokens" : n;
    const std::vector<float> bias = score_bias_ ? host_values(params_[0].value) : std::vector<float>{};
    const std::vector<float> mix = talking_.on() ? TalkingHeads::packed(mix_params()) : std::vector<float>{};
    g.attention(y, g.pixel_tokens(n, inputs[0]), g.pixel_tokens(n, inputs.at(1)), g.pixel_tokens(n, inputs.at(2)),
                heads_, seq_q_, seq_kv_, key_ / heads_, value_ / heads_, desc(1).scale_or_default(), causal_,
                score_bias_ ? &bias : nullptr, talking_.on() ? &mix : nullptr);
    return image ? g.tokens_image(n, y, out) : OnnxValue{n, out, false};
  }

 private:
  AttentionDesc desc(int64_t n) const {
    AttentionDesc d;
    d.n = n;
    d.heads = heads_;
    d.seq_q = seq_q_;
    d.seq_kv = seq_kv_;
    d.key_dim = key_ / heads_;
    d.value_dim = value_ / heads_;
    d.causal = causal_;
    d.scale = static_cast<float>(scale_);
    d.dropout = static_cast<float>(dropout_);
    d.bias_n = score_bias_ ? 1 : 0;
    d.talking_heads = talking_.on();
    d.pair_probs_bias = talking_.pair_bias();
    return d;
  }
  // The talking heads' four learnables, after the ScoreBias.
  Param* mix_params() { return params_.data() + (score_bias_ ? 1 : 0); }
  const Param* mix_params() const { return params_.data() + (score_bias_ ? 1 : 0); }

  int64_t heads_ = 1, seq_q_ = 1, seq_kv_ = 1, key_ = 1, value_ = 1;
  double scale_ = 0;  // 0: auto
  bool causal_ = false;
  bool score_bias_ = false;  // ScoreBias: params_[0], (heads, Sq, Skv) added to the scaled scores
  Param scores_;             // its factors, read at construction
  TalkingHeads talking_;     // TalkingHeads: the head mixes, after the ScoreBias in params_
  double dropout_ = 0;
  std::unique_ptr<AttentionOp> op_;
  Tensor scratch_[3];  // gradients of inputs that need none (the op writes all three)
};

}  // namespace

const LayerType& attention_layer_type() {
  static const LayerType t{
      "attention",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<AttentionLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt
