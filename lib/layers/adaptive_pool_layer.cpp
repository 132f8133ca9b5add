// adaptiveAveragePooling2d: MATLAB's adaptiveAveragePooling2dLayer (R2024a), PyTorch's
// AdaptiveAvgPool2d: an image pooled to OutputSize [h w] by averaging regions whose bounds
// depend on the input's size (backend/adaptive_pool_op.h: PyTorch's regions, which overlap when
// the output size does not divide the input's). ONNX: GlobalAveragePool to 1x1, AveragePool
// (kernel = stride) when the output size divides the input's, otherwise two MatMul by constant
// averaging matrices (along the width, then the height), each of which imports back as this
// layer (pooling one dimension); an ONNX file's AveragePool imports as averagePooling2d, which
// computes the same.
#include <cmath>
#include <memory>
#include <vector>

#include "backend/adaptive_pool_op.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

class AdaptiveAveragePoolingLayer final : public Layer {
 public:
  explicit AdaptiveAveragePoolingLayer(const LayerSpec& spec) : Layer(spec) {
    const std::vector<int64_t> out = spec_.get_ints("OutputSize", {}, 2, 1);
    if (out.empty()) throw ConfigError(spec.where() + "option OutputSize is required (e.g. OutputSize: 7 or [7 7])");
    d_.out_h = out[0];
    d_.out_w = out[1];
  }
  // An image layer: not on token sequences.
  bool takes(DataFormat f) const override { return f == DataFormat::kSSCB; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    d_.h = inputs[0][0];
    d_.w = inputs[0][1];
    d_.c = inputs[0][2];
    return Shape{d_.out_h, d_.out_w, d_.c};
  }
  void setup(int64_t n, Backend& be) override {
    d_.n = n;
    op_ = be.make(d_);
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->forward(*x[0], y); }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(dy, *dx[0]);
  }
  int64_t flops_per_image() const override { return d_.h * d_.w * d_.c + d_.out_h * d_.out_w * d_.c; }

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const OnnxValue x = g.image(n, inputs.at(0));
    if (d_.out_h == 1 && d_.out_w == 1) {
      g.add_node("GlobalAveragePool", n, {x.name}, n);
      return OnnxValue{n, out, false};
    }
    if (d_.h % d_.out_h == 0 && d_.w % d_.out_w == 0) {
      const std::vector<int64_t> k{d_.h / d_.out_h, d_.w / d_.out_w};
      g.add_node("AveragePool", n, {x.name}, n, {OnnxAttr("kernel_shape", k), OnnxAttr("strides", k)});
      return OnnxValue{n, out, false};
    }
    // (N, C, H, W) x (W, Wo) -> (N, C, H, Wo); (Ho, H) x that -> (N, C, Ho, Wo).
    std::vector<float> cols(static_cast<size_t>(d_.w * d_.out_w), 0.f), rows(static_cast<size_t>(d_.out_h * d_.h), 0.f);
    for (int64_t j = 0; j < d_.out_w; ++j) {
      const int64_t w0 = adaptive_begin(j, d_.w, d_.out_w), w1 = adaptive_end(j, d_.w, d_.out_w);
      for (int64_t w = w0; w < w1; ++w) cols[static_cast<size_t>(w * d_.out_w + j)] = 1.f / static_cast<float>(w1 - w0);
    }
    for (int64_t i = 0; i < d_.out_h; ++i) {
      const int64_t h0 = adaptive_begin(i, d_.h, d_.out_h), h1 = adaptive_end(i, d_.h, d_.out_h);
      for (int64_t h = h0; h < h1; ++h) rows[static_cast<size_t>(i * d_.h + h)] = 1.f / static_cast<float>(h1 - h0);
    }
    g.add_floats(n + "_columns", {d_.w, d_.out_w}, cols);
    g.add_floats(n + "_rows", {d_.out_h, d_.h}, rows);
    g.add_node("MatMul", n + "_width", {x.name, n + "_columns"}, n + "_pooled_width");
    g.add_node("MatMul", n, {n + "_rows", n + "_pooled_width"}, n);
    return OnnxValue{n, out, false};
  }

 private:
  AdaptivePoolDesc d_;
  std::unique_ptr<AdaptivePoolOp> op_;
};

// Whether m (out x in, row-major; transposed: in x out) holds the averaging weights of `in`
// values pooled to `out` (1 / region size inside each output's region, 0 elsewhere).
bool averaging_matrix(const std::vector<float>& m, int64_t in, int64_t out, bool transposed) {
  if (static_cast<int64_t>(m.size()) != in * out) return false;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t b = adaptive_begin(o, in, out), e = adaptive_end(o, in, out);
    for (int64_t i = 0; i < in; ++i) {
      const float want = i >= b && i < e ? 1.f / static_cast<float>(e - b) : 0.f;
      const float got = m[static_cast<size_t>(transposed ? i * out + o : o * in + i)];
      if (!(std::fabs(got - want) <= 1e-6f * std::fabs(want))) return false;
    }
  }
  return true;
}

}  // namespace

bool adaptive_pool_from_onnx(OnnxNodeReader& r) {
  if (r.op() != "MatMul" || r.num_inputs() != 2 || r.is_constant(0) == r.is_constant(1)) return false;
  const bool rows = r.is_constant(0);  // (Ho, H) x image: along the height; else image x (W, Wo)
  const OnnxValue in = r.input(rows ? 1 : 0, false, true);
  if (in.flat || in.channels_last || in.tokens || in.indices) return false;
  const std::vector<int64_t> dims = r.dims(rows ? 0 : 1, "averaging matrix");
  const int64_t h = in.shape[0], w = in.shape[1];
  if (dims.size() != 2 || dims[rows ? 1 : 0] != (rows ? h : w)) return false;
  const int64_t out = dims[rows ? 0 : 1];
  if (!averaging_matrix(r.floats(rows ? 0 : 1, "averaging matrix"), rows ? h : w, out, !rows)) return false;
  LayerSpec& s = r.add_layer("adaptiveAveragePooling2d", {in.name});
  const int64_t out_h = rows ? out : h, out_w = rows ? w : out;
  set_list(s, "OutputSize", {out_h, out_w});
  r.set_output(OnnxValue{s.name, Shape{out_h, out_w, in.shape[2]}, false});
  return true;
}

const LayerType& adaptive_average_pooling_layer_type() {
  static const LayerType t{
      "adaptiveAveragePooling2d",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<AdaptiveAveragePoolingLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt
