// channelAttention (dltrain's own; MATLAB has no such layer): multi-head attention across the
// channels instead of the tokens, on queries, keys and values that are already projected, each a
// token sequence (SCB) or an image (SSCB: its pixels in row order) of S tokens and C channels.
// Per image and head h (channels [h d, (h + 1) d) of each, d = C / NumHeads):
//   A_h = softmax over each row of (Scale * Q_h^T K_h)   (d x d: channel i of the queries against
//                                                          channel j of the keys, over the S tokens)
//   O_h = V_h A_h^T                                       (S x d: each token's channels mixed by A_h)
// Scale "auto" = 1 / sqrt(d). The output has the query's format and C channels.
// NormalizeQueryKey (XCiT's cross-covariance attention): each channel of Q and K divided by its
// L2 norm over the tokens (at least 1e-12), and the scores of head h multiplied by the learnable
// Temperature[h] (NumHeads values, 1 at first, no L2 by default: XCiT excludes it from weight
// decay); Scale "auto" is then 1. Without it there are no learnables.
// PyTorch: XCiT's XCA (q, k, v of (N, heads, d, S): F.normalize(q) @ F.normalize(k)^T times
// temperature, softmax, @ v) and DaViT's ChannelAttention (softmax(k^T @ v) applied to q: this
// layer's query, key and value are DaViT's k, v and q).
// It is the attention op (backend/attention_op.h) on the transposed heads: Q_h^T, K_h^T and V_h^T
// are d "tokens" of S values, so A_h V_h^T = attention(Q^T, K^T, V^T) per head, with the images'
// heads as the op's batch; the spatial transpose op (backend/token_ops.h) turns (S, C) into
// (C, S) = (heads, d, S) and back, and the head normalize op divides each of those rows by its
// norm (times the head's temperature for Q). These ops run on every backend, so this layer has
// no kernel of its own.
#include <cmath>
#include <memory>
#include <string>

#include "backend/attention_op.h"
#include "backend/token_ops.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

class ChannelAttentionLayer final : public Layer {
 public:
  explicit ChannelAttentionLayer(const LayerSpec& spec) : Layer(spec) {
    heads_ = num_heads_option(spec_);
    scale_ = scale_option(spec_, "channel");
    normalize_ = spec_.get_bool("NormalizeQueryKey", false);
    temperature_ = make_param(spec_, "Temperature", Shape{}, Init::kOnes, 0.f);
  }

  int num_inputs() const override { return 3; }
  bool takes(DataFormat f) const override { return f == DataFormat::kSCB || f == DataFormat::kSSCB; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 3);
    const char* names[3] = {"query", "key", "value"};
    seq_ = inputs[0][0] * inputs[0][1];
    c_ = inputs[0][2];
    for (int i = 1; i < 3; ++i) {
      const Shape& in = inputs[static_cast<size_t>(i)];
      if (in[0] * in[1] != seq_ || in[2] != c_)
        shape_error(spec_, std::string("the ") + names[i] + " has " + std::to_string(in[0] * in[1]) + " tokens of " +
                               std::to_string(in[2]) + " channels and the query " + std::to_string(seq_) + " of " +
                               std::to_string(c_) +
                               " (Inputs [query, key, value]: the same tokens and channels, the heads' d x d "
                               "weights mix the value's channels)");
    }
    if (c_ % heads_ != 0)
      shape_error(spec_, "the " + std::to_string(c_) + " channels are not a multiple of NumHeads (" +
                             std::to_string(heads_) + ")");
    params_.clear();
    if (normalize_) {
      Param t = temperature_;
      t.shape = Shape{heads_};
      params_.push_back(t);
    }
    return inputs[0];
  }

  void setup(int64_t n, Backend& be) override {
    const Device dev = be.device();
    to_heads_ = be.make(SpatialTransposeDesc{n, seq_, c_, 1});  // (S, C) -> (C, S)
    from_heads_ = be.make(SpatialTransposeDesc{n, c_, seq_, 1});
    AttentionDesc d;
    d.n = n * heads_;
    d.seq_q = d.seq_kv = c_ / heads_;
    d.key_dim = d.value_dim = seq_;
    d.scale = scale();
    op_ = be.make(d);
    for (Tensor& t : t_) t = Tensor(Shape{n, c_, seq_, 1}, dev);
    dq_ = Tensor();  // made by the first backward
    norm_q_.reset();
    norm_k_.reset();
    if (!normalize_) return;
    // (N, heads, d, S): each of the d rows of S values; Q's times its head's temperature
    norm_q_ = be.make(HeadNormalizeDesc{n, heads_, seq_, 0, c_ / heads_, true});
    norm_k_ = be.make(HeadNormalizeDesc{n, heads_, seq_, 0, c_ / heads_, true});
    for (Tensor& t : unit_) t = Tensor(Shape{n, c_, seq_, 1}, dev);
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    for (int i = 0; i < 3; ++i) to_heads_->forward(*x[static_cast<size_t>(i)], t_[i]);
    if (normalize_) {
      norm_q_->forward(t_[0], params_[0].value, unit_[0]);
      norm_k_->forward(t_[1], Tensor(), unit_[1]);
    }
    op_->forward(q(), k(), t_[2], t_[3]);
    from_heads_->forward(t_[3], y);
  }

  // The op's gradients of the transposed heads, each brought back to its input's layout: the
  // output's slot takes dy transposed, dK^T and dV^T go over the op's K^T and V^T (the op reads
  // each before it writes its gradient), dQ^T into a buffer of its own. Normalized, the unit
  // rows' gradients go back through the norms in place: dQ^T over itself (and the temperature's
  // gradient), dK^T over the raw K^T.
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    from_heads_->backward(dy, t_[3]);
    if (!dq_.defined()) dq_ = Tensor(t_[3].shape(), t_[3].device());
    op_->backward(q(), k(), t_[2], t_[3], dq_, k(), t_[2]);
    if (normalize_) {
      Param& t = params_[0];
      norm_q_->backward(t_[0], t.value, dq_, dq_, t.frozen() ? nullptr : &t.grad);
      norm_k_->backward(t_[1], Tensor(), unit_[1], t_[1], nullptr);
    }
    const Tensor* g[3] = {&dq_, &t_[1], &t_[2]};
    for (size_t i = 0; i < 3; ++i)
      if (dx[i]) to_heads_->backward(*g[i], *dx[i]);
  }

  int64_t flops_per_image() const override { return 4 * c_ * (c_ / heads_) * seq_; }
  std::vector<std::string> learnable_options() const override { return {"Temperature"}; }

  // Each input's heads (N, heads, d, S) (the key's (N, heads, S, d)), Q^T K, the scale, Softmax,
  // times V^T, back to (N, S, C): the form of XCiT's and DaViT's channel attention
  // (OnnxGraph::channel_attention).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const bool image = !inputs.at(0).tokens;
    const std::string y = image ? n + "_tokens" : n;
    const std::vector<float> temperature = normalize_ ? host_values(params_[0].value) : std::vector<float>{};
    g.channel_attention(y, g.pixel_tokens(n, inputs[0]), g.pixel_tokens(n, inputs.at(1)),
                        g.pixel_tokens(n, inputs.at(2)), heads_, seq_, c_ / heads_, scale(),
                        normalize_ ? &temperature : nullptr);
    return image ? g.tokens_image(n, y, out) : OnnxValue{n, out, false};
  }

 private:
  float scale() const {
    if (scale_ != 0) return static_cast<float>(scale_);
    return normalize_ ? 1.f : 1.f / std::sqrt(static_cast<float>(c_ / heads_));
  }
  // The op's queries and keys: the transposed heads, or their unit rows.
  Tensor& q() { return normalize_ ? unit_[0] : t_[0]; }
  Tensor& k() { return normalize_ ? unit_[1] : t_[1]; }

  int64_t heads_ = 1, seq_ = 1, c_ = 1;
  double scale_ = 0;  // 0: auto
  bool normalize_ = false;
  Param temperature_;  // its factors, read at construction
  std::unique_ptr<SpatialTransposeOp> to_heads_, from_heads_;
  std::unique_ptr<AttentionOp> op_;
  std::unique_ptr<HeadNormalizeOp> norm_q_, norm_k_;
  Tensor unit_[2];  // normalized: Q^T's rows times the temperature, K^T's rows
  Tensor t_[4];  // Q^T, K^T, V^T and the output (N, C, S); in backward dO^T, and dK^T, dV^T over K^T, V^T
  Tensor dq_;    // the op's gradient of Q^T
};

}  // namespace

const LayerType& channel_attention_layer_type() {
  static const LayerType t{
      "channelAttention",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<ChannelAttentionLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt
