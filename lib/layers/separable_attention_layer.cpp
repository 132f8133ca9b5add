// separableAttention (dltrain's own: MobileViT v2's separable self-attention, its linear
// attention; MATLAB has no such layer): PatchSize (a scalar or [height width], default 2). The
// input image has 1 + 2C channels, a query, C keys and C values (the joint 1x1 convolution before
// it: MobileViT v2's qkv_proj); the output has C. The pixels at one offset inside the patches
// form a group (MobileViT v2's unfold, read in place); within each, the query's softmax over the
// group weighs the keys into one context vector, and each pixel's output is relu(its values)
// times it (backend/separable_attention_op.h). The output projection is the 1x1 convolution
// after it. ONNX: MobileViT v2's unfold (Reshape, Transpose, Reshape to (N, 1 + 2C, P, N')), the
// Split, Softmax over the patches, Mul, ReduceSum, Relu and Mul, and the fold back, both ways
// (the import reads timm's LinearSelfAttention between its unfold and fold:
// lib/onnx/onnx_import_patches.cpp).
#include <memory>

#include "backend/separable_attention_op.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

class SeparableAttentionLayer final : public Layer {
 public:
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  explicit SeparableAttentionLayer(const LayerSpec& spec) : Layer(spec) {
    const std::vector<int64_t> p = spec_.get_ints("PatchSize", {2, 2}, 2, 1);
    d_.ph = p[0];
    d_.pw = p[1];
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    const Shape& in = inputs[0];
    if (in[2] < 3 || in[2] % 2 == 0)
      shape_error(spec_, "input is " + in.str() + " but its " + std::to_string(in[2]) +
                             " channels are not a query and as many keys as values (1 + 2C channels, C at least 1)");
    if (in[0] % d_.ph != 0 || in[1] % d_.pw != 0)
      shape_error(spec_, "input is " + in.str() + " but PatchSize [" + std::to_string(d_.ph) + " " +
                             std::to_string(d_.pw) + "] does not divide its height and width");
    d_.h = in[0];
    d_.w = in[1];
    d_.c = (in[2] - 1) / 2;
    return Shape{d_.h, d_.w, d_.c};
  }
  void setup(int64_t n, Backend& be) override {
    d_.n = n;
    op_ = be.make(d_);
    scores_ = Tensor(Shape{n, d_.h, d_.w}, be.device());
    context_ = Tensor(Shape{n, d_.ph * d_.pw, d_.c}, be.device());
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    op_->forward(*x[0], y, scores_, context_);
  }
  void backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(*x[0], dy, scores_, context_, *dx[0]);
  }
  // The softmax's exponentials, the context's and the output's multiply-adds.
  int64_t flops_per_image() const override { return d_.h * d_.w * (1 + 4 * d_.c); }

  // MobileViT v2's form, as PyTorch's exporters write timm's LinearSelfAttention.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const OnnxValue in = g.image(n, inputs.at(0));
    const int64_t c = d_.c, xc = 1 + 2 * c, nh = d_.h / d_.ph, nw = d_.w / d_.pw;
    auto node = [&](const std::string& op, const std::string& tag, const std::vector<std::string>& ins,
                    const std::vector<OnnxAttr>& attrs = {}) { return g.node(op, n + tag, ins, attrs); };
    auto ints = [&](const std::string& tag, const std::vector<int64_t>& v) { return g.ints(n + tag, v); };
    std::string x = node("Reshape", "_split", {in.name, ints("_split_shape", {-1, xc, nh, d_.ph, nw, d_.pw})});
    x = node("Transpose", "_unfold_t", {x}, {OnnxAttr("perm", std::vector<int64_t>{0, 1, 3, 5, 2, 4})});
    x = node("Reshape", "_unfold", {x, ints("_unfold_shape", {-1, xc, d_.ph * d_.pw, nh * nw})});
    const std::string q = n + "_q", k = n + "_k", v = n + "_v";
    g.add_node_outputs("Split", n + "_qkv", {x, ints("_qkv_sizes", {1, c, c})}, {q, k, v},
                       {OnnxAttr("axis", int64_t{1})});
    const std::string s = node("Softmax", "_scores", {q}, {OnnxAttr("axis", int64_t{-1})});
    const std::string ks = node("Mul", "_weighted", {k, s});
    const std::string ctx =
        node("ReduceSum", "_context", {ks, ints("_context_axes", {-1})}, {OnnxAttr("keepdims", int64_t{1})});
    const std::string rv = node("Relu", "_relu", {v});
    std::string y = node("Mul", "_out", {rv, ctx});
    y = node("Reshape", "_fold_split", {y, ints("_fold_split_shape", {-1, c, d_.ph, d_.pw, nh, nw})});
    y = node("Transpose", "_fold_t", {y}, {OnnxAttr("perm", std::vector<int64_t>{0, 1, 4, 2, 5, 3})});
    y = node("Reshape", "", {y, ints("_fold_shape", {-1, c, d_.h, d_.w})});
    return OnnxValue{y, out, false};
  }

 private:
  SeparableAttentionDesc d_;
  std::unique_ptr<SeparableAttentionOp> op_;
  Tensor scores_, context_;  // the forward's, for the backward
};

}  // namespace

const LayerType& separable_attention_layer_type() {
  static const LayerType t{
      "separableAttention",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<SeparableAttentionLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt
