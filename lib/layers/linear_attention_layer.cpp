// linearAttention (dltrain's own: EfficientViT's ReLU linear attention, timm's LiteMLA; MATLAB
// has no such layer): NumHeads (required), Epsilon (1e-5, added to each token's denominator).
// The input image has NumHeads * 3d channels, each head's d queries, d keys and d values side by
// side (the joint 1x1 convolution before it, with EfficientViT's multi-scale aggregation
// concatenated); the output has NumHeads * d, head h's channels [h d, (h + 1) d). Every pixel is
// a token: per head, relu(Q) (relu(K)^T [V 1]), each token's first d values divided by its last
// plus Epsilon (backend/linear_attention_op.h): linear in the pixels, no N x N scores. The output
// projection is the 1x1 convolution after it. ONNX: timm's form both ways (Reshape (N, heads,
// 3d, H*W), Transpose, Split, Relu, Pad with a column of ones, the two MatMuls, Slice, Add, Div,
// Transpose and Reshape back; the import reads it in lib/onnx/onnx_import_linear.cpp).
#include <memory>

#include "backend/linear_attention_op.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

class LinearAttentionLayer final : public Layer {
 public:
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  explicit LinearAttentionLayer(const LayerSpec& spec) : Layer(spec) {
    d_.heads = spec_.get_int("NumHeads", 0, 1);
    if (d_.heads == 0) throw ConfigError(spec.where() + "option NumHeads is required (e.g. NumHeads: 4)");
    const double eps = spec_.get_double("Epsilon", 1e-5);
    if (!(eps >= 0 && eps < 1e30)) throw ConfigError(spec.where() + "option Epsilon must be a number >= 0");
    d_.eps = static_cast<float>(eps);
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    const Shape& in = inputs[0];
    if (in[2] < 3 * d_.heads || in[2] % (3 * d_.heads) != 0)
      shape_error(spec_, "input is " + in.str() + " but its " + std::to_string(in[2]) + " channels are not NumHeads (" +
                             std::to_string(d_.heads) + ") times 3d (each head's d queries, d keys and d values)");
    d_.s = in[0] * in[1];
    d_.d = in[2] / (3 * d_.heads);
    h_ = in[0];
    w_ = in[1];
    return Shape{in[0], in[1], d_.heads * d_.d};
  }
  void setup(int64_t n, Backend& be) override {
    d_.n = n;
    op_ = be.make(d_);
    kv_ = Tensor(Shape{n, d_.heads, d_.d, d_.d + 1}, be.device());
    den_ = Tensor(Shape{n, d_.heads, d_.s}, be.device());
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    op_->forward(*x[0], y, kv_, den_);
  }
  void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(*x[0], y, dy, kv_, den_, *dx[0]);
  }
  // The two products' multiply-adds (k^T v' and q kv), the ReLUs and the division.
  int64_t flops_per_image() const override { return d_.heads * d_.s * (4 * d_.d * (d_.d + 1) + 3 * d_.d); }

  // timm's LiteMLA as PyTorch's exporters write it.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const OnnxValue in = g.image(n, inputs.at(0));
    const int64_t h = d_.heads, d = d_.d;
    auto node = [&](const std::string& op, const std::string& tag, const std::vector<std::string>& ins,
                    const std::vector<OnnxAttr>& attrs = {}) { return g.node(op, n + tag, ins, attrs); };
    auto ints = [&](const std::string& tag, const std::vector<int64_t>& v) { return g.ints(n + tag, v); };
    const OnnxAttr swap("perm", std::vector<int64_t>{0, 1, 3, 2});
    std::string x = node("Reshape", "_heads", {in.name, ints("_heads_shape", {-1, h, 3 * d, d_.s})});
    x = node("Transpose", "_tokens", {x}, {swap});
    const std::string q = n + "_q", k = n + "_k", v = n + "_v";
    g.add_node_outputs("Split", n + "_qkv", {x, ints("_qkv_sizes", {d, d, d})}, {q, k, v},
                       {OnnxAttr("axis", int64_t{3})});
    const std::string rq = node("Relu", "_relu_q", {q}), rk = node("Relu", "_relu_k", {k});
    const std::string ones = g.add_floats(n + "_one", {}, {1.f});
    const std::string vp = node("Pad", "_ones", {v, ints("_ones_pads", {0, 0, 0, 0, 0, 0, 0, 1}), ones},
                                {OnnxAttr("mode", std::string("constant"))});
    const std::string kt = node("Transpose", "_keys_t", {rk}, {swap});
    const std::string kv = node("MatMul", "_kv", {kt, vp});
    const std::string num = node("MatMul", "_num", {rq, kv});
    const std::string axis = ints("_axis", {3}), step = ints("_step", {1});
    const std::string top = node("Slice", "_top", {num, ints("_top_start", {0}), ints("_top_end", {d}), axis, step});
    const std::string last =
        node("Slice", "_last", {num, ints("_last_start", {d}), ints("_last_end", {d + 1}), axis, step});
    const std::string den = node("Add", "_den", {last, g.add_floats(n + "_eps", {}, {d_.eps})});
    std::string y = node("Div", "_div", {top, den});
    y = node("Transpose", "_channels", {y}, {swap});
    y = node("Reshape", "", {y, ints("_image_shape", {-1, h * d, h_, w_})});
    return OnnxValue{y, out, false};
  }

 private:
  LinearAttentionDesc d_;
  int64_t h_ = 1, w_ = 1;
  std::unique_ptr<LinearAttentionOp> op_;
  Tensor kv_, den_;  // the forward's, for the backward
};

}  // namespace

const LayerType& linear_attention_layer_type() {
  static const LayerType t{
      "linearAttention",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<LinearAttentionLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt
