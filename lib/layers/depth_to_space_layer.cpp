// depthToSpace2d (MATLAB's depthToSpace2dLayer): BlockSize (a scalar or [height width]) and
// Mode ("dcr", the default, or "crd"); each input pixel's C channels become a block of output
// pixels with C / (bh * bw) channels (backend/depth_to_space_op.h has the ordering of each
// mode). ONNX: DepthToSpace both ways (one block size for both dimensions; PyTorch's
// pixel_shuffle exports as its CRD mode).
// spaceToDepth (MATLAB's spaceToDepthLayer): its inverse in DCR order, each bh x bw block of
// input pixels one output pixel of C * bh * bw channels, y[n, h, w, (i * bw + j) * C + k] =
// x[n, h * bh + i, w * bw + j, k] (ONNX SpaceToDepth, both ways): the depth-to-space op run
// backwards. Swin's patch merging is spaceToDepth 2, layerNormalization and a 1x1 convolution.
#include <memory>

#include "backend/depth_to_space_op.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

// BlockSize (required): sets d's bh and bw.
void read_block_size(const LayerSpec& spec, DepthToSpaceDesc& d) {
  const std::vector<int64_t> b = spec.get_ints("BlockSize", {}, 2, 1);
  if (b.empty())
    throw ConfigError(spec.where() + "option BlockSize is required (e.g. BlockSize: 2, or [2 3] for height and width)");
  d.bh = b[0];
  d.bw = b[1];
}

// The ONNX node (DepthToSpace or SpaceToDepth) of a square block: `op` on the image form of input.
OnnxValue block_node(OnnxGraph& g, const Layer& l, const DepthToSpaceDesc& d, const std::string& op,
                     std::vector<OnnxAttr> attrs, const OnnxValue& input, const Shape& out) {
  if (d.bh != d.bw)
    throw ModelError(g.path() + ": layer '" + l.name() + "' (" + l.type() + ") has block " + std::to_string(d.bh) +
                     "x" + std::to_string(d.bw) + "; ONNX " + op + " has one block size for both dimensions");
  const OnnxValue x = g.image(l.name(), input);
  attrs.push_back(OnnxAttr("blocksize", d.bh));
  g.add_node(op, l.name(), {x.name}, l.name(), attrs);
  return OnnxValue{l.name(), out, false};
}

// The blocksize attribute of an import's DepthToSpace or SpaceToDepth node.
int64_t onnx_block_size(OnnxNodeReader& r) {
  const int64_t b = r.attr_int("blocksize", 0);
  if (b < 1 || b > kOnnxMaxWindow) r.fail("blocksize " + std::to_string(b) + " is not a block size (1 or more)");
  return b;
}

class DepthToSpaceLayer final : public Layer {
 public:
  // An image layer: not on token sequences.
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  explicit DepthToSpaceLayer(const LayerSpec& spec) : Layer(spec) {
    read_block_size(spec_, d_);
    d_.crd = spec_.get_choice("Mode", "dcr", {"dcr", "crd"}) == "crd";
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    d_.h = inputs[0][0];
    d_.w = inputs[0][1];
    d_.c = inputs[0][2];
    if (d_.c % (d_.bh * d_.bw) != 0)
      shape_error(spec_, "input is " + inputs[0].str() + " but its " + std::to_string(d_.c) +
                             " channels do not divide into blocks of " + std::to_string(d_.bh) + "x" +
                             std::to_string(d_.bw) + " (the channels must be a multiple of " +
                             std::to_string(d_.bh * d_.bw) + ")");
    return Shape{d_.h * d_.bh, d_.w * d_.bw, d_.out_c()};
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

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    return block_node(g, *this, d_, "DepthToSpace", {OnnxAttr("mode", std::string(d_.crd ? "CRD" : "DCR"))},
                      inputs.at(0), out);
  }

  static void from_onnx(OnnxNodeReader& r) {
    const OnnxValue in = r.input(0);
    r.need_image(in);
    const int64_t b = onnx_block_size(r);
    const std::string mode = r.attr_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") r.fail("mode '" + mode + "' is neither DCR nor CRD");
    if (in.shape[2] % (b * b) != 0)
      r.fail("its input has " + std::to_string(in.shape[2]) +
             " channels, not a multiple of blocksize^2 = " + std::to_string(b * b));
    LayerSpec& s = r.add_layer("depthToSpace2d", {in.name});
    s.set("BlockSize", std::to_string(b));
    s.set("Mode", mode == "CRD" ? "crd" : "dcr");
    r.set_output(OnnxValue{s.name, Shape{in.shape[0] * b, in.shape[1] * b, in.shape[2] / (b * b)}, false});
  }

 private:
  DepthToSpaceDesc d_;
  std::unique_ptr<DepthToSpaceOp> op_;
};

class SpaceToDepthLayer final : public Layer {
 public:
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  explicit SpaceToDepthLayer(const LayerSpec& spec) : Layer(spec) { read_block_size(spec_, d_); }

  // d_ describes the depth-to-space from this layer's output back to its input.
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    const Shape& in = inputs[0];
    if (in[0] % d_.bh != 0 || in[1] % d_.bw != 0)
      shape_error(spec_, "input is " + in.str() + " but BlockSize [" + std::to_string(d_.bh) + " " +
                             std::to_string(d_.bw) + "] does not divide its height and width");
    d_.h = in[0] / d_.bh;
    d_.w = in[1] / d_.bw;
    d_.c = in[2] * d_.bh * d_.bw;
    return Shape{d_.h, d_.w, d_.c};
  }
  void setup(int64_t n, Backend& be) override {
    d_.n = n;
    op_ = be.make(d_);
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->backward(*x[0], y); }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->forward(dy, *dx[0]);
  }

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    return block_node(g, *this, d_, "SpaceToDepth", {}, inputs.at(0), out);
  }

  static void from_onnx(OnnxNodeReader& r) {
    const OnnxValue in = r.input(0);
    r.need_image(in);
    const int64_t b = onnx_block_size(r);
    if (in.shape[0] % b != 0 || in.shape[1] % b != 0)
      r.fail("its input is " + std::to_string(in.shape[0]) + "x" + std::to_string(in.shape[1]) +
             " pixels, not a multiple of blocksize " + std::to_string(b));
    LayerSpec& s = r.add_layer("spaceToDepth", {in.name});
    s.set("BlockSize", std::to_string(b));
    r.set_output(OnnxValue{s.name, Shape{in.shape[0] / b, in.shape[1] / b, in.shape[2] * b * b}, false});
  }

 private:
  DepthToSpaceDesc d_;
  std::unique_ptr<DepthToSpaceOp> op_;
};

}  // namespace

const LayerType& space_to_depth_layer_type() {
  static const LayerType t{
      "spaceToDepth",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<SpaceToDepthLayer>(s); },
      {"SpaceToDepth"},
      SpaceToDepthLayer::from_onnx};
  return t;
}

const LayerType& depth_to_space_layer_type() {
  static const LayerType t{
      "depthToSpace2d",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<DepthToSpaceLayer>(s); },
      {"DepthToSpace"},
      DepthToSpaceLayer::from_onnx};
  return t;
}

}  // namespace dlt
