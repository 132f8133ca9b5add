// channelAttention (dltrain's own; MATLAB has no such layer): multi-head attention across the
// channels instead of the tokens, on queries, keys and values that are already projected, each a
// token sequence (SCB) or an image (SSCB: its pixels in row order) of S tokens and C channels.
// Per image and head h (channels [h d, (h + 1) d) of each, d = C / NumHeads):
//   A_h = softmax over each row of (Scale * Q_h^T K_h)   (d x d: channel i of the queries against
//                                                          channel j of the keys, over the S tokens)
//   O_h = V_h A_h^T                                       (S x d: each token's channels mixed by A_h)
// Scale "auto" = 1 / sqrt(d). The output has the query's format and C channels. No learnables.
// PyTorch: XCiT's cross-covariance attention (q, k, v of (N, heads, d, S): softmax(q @ k^T) @ v,
// without its normalization and temperature) and DaViT's ChannelAttention (softmax(k^T @ v) applied
// to q: this layer's query, key and value are DaViT's k, v and q).
// It is the attention op (backend/attention_op.h) on the transposed heads: Q_h^T, K_h^T and V_h^T
// are d "tokens" of S values, so A_h V_h^T = attention(Q^T, K^T, V^T) per head, with the images'
// heads as the op's batch; the spatial transpose op (backend/token_ops.h) turns (S, C) into
// (C, S) = (heads, d, S) and back. Both ops run on every backend, so this layer has no kernel of
// its own.
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
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    for (int i = 0; i < 3; ++i) to_heads_->forward(*x[static_cast<size_t>(i)], t_[i]);
    op_->forward(t_[0], t_[1], t_[2], t_[3]);
    from_heads_->forward(t_[3], y);
  }

  // The op's gradients of the transposed heads, each brought back to its input's layout: the
  // output's slot takes dy transposed, dK^T and dV^T go over K^T and V^T (the op reads each before
  // it writes its gradient), dQ^T into a buffer of its own.
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    from_heads_->backward(dy, t_[3]);
    if (!dq_.defined()) dq_ = Tensor(t_[3].shape(), t_[3].device());
    op_->backward(t_[0], t_[1], t_[2], t_[3], dq_, t_[1], t_[2]);
    const Tensor* g[3] = {&dq_, &t_[1], &t_[2]};
    for (size_t i = 0; i < 3; ++i)
      if (dx[i]) to_heads_->backward(*g[i], *dx[i]);
  }

  int64_t flops_per_image() const override { return 4 * c_ * (c_ / heads_) * seq_; }

  // Each input's heads (N, heads, d, S) (the key's (N, heads, S, d)), Q^T K, the scale, Softmax,
  // times V^T, back to (N, S, C): the form of XCiT's and DaViT's channel attention
  // (OnnxGraph::channel_attention).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const bool image = !inputs.at(0).tokens;
    const std::string y = image ? n + "_tokens" : n;
    g.channel_attention(y, g.pixel_tokens(n, inputs[0]), g.pixel_tokens(n, inputs.at(1)),
                        g.pixel_tokens(n, inputs.at(2)), heads_, seq_, c_ / heads_, scale());
    return image ? g.tokens_image(n, y, out) : OnnxValue{n, out, false};
  }

 private:
  float scale() const {
    return scale_ != 0 ? static_cast<float>(scale_) : 1.f / std::sqrt(static_cast<float>(c_ / heads_));
  }

  int64_t heads_ = 1, seq_ = 1, c_ = 1;
  double scale_ = 0;  // 0: auto
  std::unique_ptr<SpatialTransposeOp> to_heads_, from_heads_;
  std::unique_ptr<AttentionOp> op_;
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
