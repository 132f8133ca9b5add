// selfAttention: MATLAB's selfAttentionLayer (R2023a) on token sequences (SCB: (S, 1, C) per
// image). Multi-head scaled dot-product attention with its four projections (attention_core.h),
// per token:
//   Q = x Wq' + bq, K = x Wk' + bk, V = x Wv' + bv   (NumKeyChannels, NumKeyChannels,
//   NumValueChannels channels: the totals over the NumHeads heads, heads contiguous blocks),
//   A = attention(Q, K, V) per head (backend/attention_op.h; AttentionMask causal hides the
//   later tokens; DropoutProbability drops attention weights in training, scaling the others
//   by 1 / (1 - p)), y = A Wo' + bo (OutputSize channels).
// Learnables with MATLAB's names and shapes: QueryWeights (NumKeyChannels, C), KeyWeights,
// ValueWeights (NumValueChannels, C), OutputWeights (OutputSize, NumValueChannels) and the
// biases; Weight / Bias initializers and factors apply to all four. PyTorch's
// nn.MultiheadAttention (batch_first) computes the same with in_proj_weight = [Wq; Wk; Wv].
// ScoreBias true (dltrain's own option; MATLAB's layer has none) adds a learnable ScoreBias
// (NumHeads, S, S) to each head's scaled scores before the softmax, the same for every image:
// BEiT's relative position bias, read from its table into one value per head and pair of tokens.
// TalkingHeads true (dltrain's own; attention_core.h): CaiT's talking-heads attention, the
// scores and the probabilities mixed across the heads by learnable (NumHeads, NumHeads) weights
// and biases (after the ScoreBias in the learnables' order).
// RotaryEmbedding interleaved / half (dltrain's own; attention_core.h): rotary position
// embedding of the queries and keys (EVA-02's), its tables the states RotaryCos and RotarySin.
// An image (SSCB, H x W x C) is taken too (dltrain's own: PVT's and SegFormer's attention over
// the pixels of a feature map): its pixels in row order are the tokens, the same memory as
// (H W, 1, C), and the output is an H x W x OutputSize image.
#include <memory>
#include <string>

#include "backend/attention_op.h"
#include "layers/attention_core.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

class SelfAttentionLayer final : public Layer {
 public:
  explicit SelfAttentionLayer(const LayerSpec& spec) : Layer(spec), talking_(spec_), rotary_(spec_) {
    heads_ = spec_.get_int("NumHeads", 0, 1);
    if (heads_ == 0) throw ConfigError(spec.where() + "option NumHeads is required (e.g. NumHeads: 3)");
    key_ = spec_.get_int("NumKeyChannels", 0, 1);
    if (key_ == 0) throw ConfigError(spec.where() + "option NumKeyChannels is required (e.g. NumKeyChannels: 192)");
    value_ = auto_int("NumValueChannels", key_);
    out_ = auto_int("OutputSize", 0);  // 0: the input's channels (infer)
    for (auto [what, n] : {std::pair<const char*, int64_t>{"NumKeyChannels", key_}, {"NumValueChannels", value_}})
      if (n % heads_ != 0)
        throw ConfigError(spec.where() + "option " + what + " (" + std::to_string(n) +
                          ") must be a multiple of NumHeads (" + std::to_string(heads_) +
                          "): it is the total over the heads");
    causal_ = spec_.get_choice("AttentionMask", "none", {"none", "causal"}) == "causal";
    dropout_ = spec_.get_double("DropoutProbability", 0.0);
    if (dropout_ < 0 || dropout_ >= 1)
      throw ConfigError(spec.where() + "option DropoutProbability must be in [0, 1), got " + std::to_string(dropout_));
    const Init wi = parse_initializer(spec_, "WeightsInitializer", "glorot");
    const Init bi = parse_initializer(spec_, "BiasInitializer", "zeros");
    weight_ = make_param(spec_, "Weight", Shape{}, wi, 1.f);
    bias_ = make_param(spec_, "Bias", Shape{}, bi, 0.f);
    score_bias_ = spec_.get_bool("ScoreBias", false);
    if (score_bias_) scores_ = make_param(spec_, "ScoreBias", Shape{}, Init::kZeros, 0.f);
  }

  bool takes(DataFormat f) const override { return f == DataFormat::kSCB || f == DataFormat::kSSCB; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    const Shape& in = inputs[0];
    s_ = in[0] * in[1];
    c_ = in[2];
    if (out_ == 0) out_ = c_;
    params_.clear();
    AttentionCore::add_params(params_, weight_, bias_, sizes());
    if (score_bias_) {
      Param b = scores_;
      b.name = "ScoreBias";
      b.shape = Shape{heads_, s_, s_};
      b.fan_in = b.fan_out = s_;
      params_.push_back(b);
    }
    talking_.add_params(params_, heads_, s_, s_);
    states_.clear();
    rotary_.add_states(states_, spec_, s_, heads_, key_ / heads_);
    return Shape{in[0], in[1], out_};
  }

  void init_params(Rng& rng) override {
    Layer::init_params(rng);
    if (rotary_.on()) rotary_.fill(states_.data());
  }

  void setup(int64_t n, Backend& be) override {
    core_.setup(be, sizes(), n, s_, causal_, static_cast<float>(dropout_), score_bias_ ? 1 : 0, mixed_, false,
                &talking_, &rotary_);
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    const bool drop = ctx.training && dropout_ > 0;
    if (score_bias_) core_.attention().set_bias(params_[8].value);
    if (talking_.on()) talking_.set(core_.attention(), mix_params());
    if (rotary_.on()) core_.set_rotary(states_[0].value, states_[1].value);
    core_.forward(*x[0], y, params_.data(), drop, drop ? dropout_key(ctx) : 0);
  }

  void backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    Tensor* dbias = score_bias_ && !params_[8].frozen() ? &params_[8].grad : nullptr;
    const HeadMixGrads dmix = talking_.on() ? talking_.grads(mix_params()) : HeadMixGrads{};
    core_.backward(*x[0], dy, dx[0], params_.data(), dbias, nullptr, talking_.on() ? &dmix : nullptr);
  }

  int64_t flops_per_image() const override { return AttentionCore::flops(sizes(), s_); }
  std::vector<std::string> learnable_options() const override {
    std::vector<std::string> names{"Weight", "Bias"};
    if (score_bias_) names.push_back("ScoreBias");
    if (talking_.on())
      for (const std::string& m : TalkingHeads::names()) names.push_back(m);
    return names;
  }

  // The projections as MatMul + Add, the attention (OnnxGraph::attention: heads, MatMul, scale,
  // causal mask, Softmax, MatMul by V, the heads side by side again), the output projection.
  // An image's pixels are made tokens first and the output made an image again.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const bool image = !inputs.at(0).tokens;
    const std::string x = g.pixel_tokens(n, inputs[0]);
    const int64_t width[3] = {key_, key_, value_};
    const char* part[3] = {"_q", "_k", "_v"};
    std::string proj[3];
    for (size_t i = 0; i < 3; ++i)
      proj[i] = g.tokens_linear(n + "_proj" + part[i], x, host_values(params_[i].value), width[i], c_,
                                host_values(params_[4 + i].value));
    AttentionDesc d;
    d.key_dim = key_ / heads_;
    const std::vector<float> bias = score_bias_ ? host_values(params_[8].value) : std::vector<float>{};
    const std::vector<float> mix = talking_.on() ? TalkingHeads::packed(mix_params()) : std::vector<float>{};
    OnnxRotary rot;
    if (rotary_.on())
      rot = OnnxRotary{rotary_.half(), rotary_.prefix(), rotary_.per_head() ? heads_ : 1, host_values(states_[0].value),
                       host_values(states_[1].value)};
    g.attention(n + "_heads", proj[0], proj[1], proj[2], heads_, s_, s_, key_ / heads_, value_ / heads_,
                d.scale_or_default(), causal_, score_bias_ ? &bias : nullptr, talking_.on() ? &mix : nullptr,
                rotary_.on() ? &rot : nullptr);
    const std::string y = image ? n + "_tokens" : n;
    g.tokens_linear(y, n + "_heads", host_values(params_[3].value), out_, value_, host_values(params_[7].value));
    return image ? g.tokens_image(n, y, out) : OnnxValue{n, out, false};
  }

  // Dropout draws a new mask each training step.
  bool stochastic() const override { return dropout_ > 0; }

 private:
  // The mask's key for this step, as the dropout layer draws its masks (Backend::dropout_forward).
  uint64_t dropout_key(const RunContext& ctx) const {
    return Rng::derive(ctx.seed, {dropout_stream(name(), ctx.iteration)}).next_u64();
  }
  // An option that is a number >= 1 or "auto" (def).
  int64_t auto_int(const std::string& key, int64_t def) const {
    const SpecValue* v = spec_.get(key);
    if (v && !v->is_list && v->items.size() == 1 && v->items[0] == "auto") return def;
    return spec_.get_int(key, def, 1);
  }
  AttentionSizes sizes() const { return {heads_, key_, value_, out_, c_}; }
  // The talking heads' four learnables, after the ScoreBias.
  Param* mix_params() { return params_.data() + (score_bias_ ? 9 : 8); }
  const Param* mix_params() const { return params_.data() + (score_bias_ ? 9 : 8); }

  int64_t heads_ = 1, key_ = 1, value_ = 1, out_ = 0, s_ = 1, c_ = 1;
  bool causal_ = false;
  bool score_bias_ = false;  // ScoreBias: params_[8], (heads, S, S) added to the scaled scores
  double dropout_ = 0;       // DropoutProbability: on the attention weights, in training
  Param weight_, bias_, scores_;
  TalkingHeads talking_;  // TalkingHeads: the head mixes, after the ScoreBias in params_
  Rotary rotary_;         // RotaryEmbedding: its tables states_[0] (cos) and [1] (sin)
  AttentionCore core_;
};

}  // namespace

const LayerType& self_attention_layer_type() {
  static const LayerType t{
      "selfAttention",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<SelfAttentionLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt
