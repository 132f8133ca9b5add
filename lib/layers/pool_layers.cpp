// maxPooling2d, averagePooling2d and globalAveragePooling2d on the backend's PoolOp.
// MATLAB defaults: Stride 1, Padding 0; average pooling counts padding as zeros.
#include <memory>

#include "layers/layer_util.h"

namespace dlt {

namespace {

class PoolingLayer final : public Layer {
 public:
  PoolingLayer(const LayerSpec& spec, PoolKind kind, bool global) : Layer(spec), kind_(kind), global_(global) {
    if (!global_) {
      auto ps = spec_.get_ints("PoolSize", {}, 2, 1);
      if (ps.empty()) throw ConfigError(spec.where() + "option PoolSize is required (e.g. PoolSize: 2)");
      kh_ = ps[0];
      kw_ = ps[1];
      auto st = spec_.get_ints("Stride", {1, 1}, 2, 1);
      sh_ = st[0];
      sw_ = st[1];
      spec_.get("Padding");
    }
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    h_ = inputs[0][0];
    w_ = inputs[0][1];
    c_ = inputs[0][2];
    if (global_) {
      kh_ = h_;
      kw_ = w_;
    } else {
      auto pad = parse_padding(spec_, h_, w_, kh_, kw_, sh_, sw_);
      pt_ = pad[0];
      pb_ = pad[1];
      pl_ = pad[2];
      pr_ = pad[3];
      if (h_ + pt_ + pb_ < kh_ || w_ + pl_ + pr_ < kw_)
        shape_error(spec_, "input is " + inputs[0].str() + " but PoolSize is " + std::to_string(kh_) + "x" +
                               std::to_string(kw_) + " (use a smaller PoolSize or add Padding)");
      if (pt_ >= kh_ || pb_ >= kh_ || pl_ >= kw_ || pr_ >= kw_)
        shape_error(spec_, "Padding must be smaller than PoolSize");
    }
    PoolDesc d = desc(1);
    return Shape{d.out_h(), d.out_w(), c_};
  }

  void setup(int64_t n, Backend& be) override { op_ = be.make_pool(desc(n)); }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    op_->forward(*x[0], y, ctx.training);
  }

  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(dy, *dx[0]);
  }

 private:
  PoolDesc desc(int64_t n) const {
    PoolDesc d;
    d.n = n;
    d.h = h_;
    d.w = w_;
    d.c = c_;
    d.kh = kh_;
    d.kw = kw_;
    d.stride_h = global_ ? 1 : sh_;
    d.stride_w = global_ ? 1 : sw_;
    d.pad_t = pt_;
    d.pad_b = pb_;
    d.pad_l = pl_;
    d.pad_r = pr_;
    d.kind = kind_;
    return d;
  }
  PoolKind kind_;
  bool global_;
  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, pt_ = 0, pb_ = 0, pl_ = 0, pr_ = 0;
  int64_t h_ = 0, w_ = 0, c_ = 0;
  std::unique_ptr<PoolOp> op_;
};

}  // namespace

std::unique_ptr<Layer> make_max_pooling_layer(const LayerSpec& spec) {
  return std::make_unique<PoolingLayer>(spec, PoolKind::kMax, false);
}
std::unique_ptr<Layer> make_average_pooling_layer(const LayerSpec& spec) {
  return std::make_unique<PoolingLayer>(spec, PoolKind::kAverage, false);
}
std::unique_ptr<Layer> make_global_average_pooling_layer(const LayerSpec& spec) {
  return std::make_unique<PoolingLayer>(spec, PoolKind::kAverage, true);
}

}  // namespace dlt
